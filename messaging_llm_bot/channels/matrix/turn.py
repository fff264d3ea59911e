"""Answer one durable inbox item from Matrix: the agent's turn (with typing and the growing answer), then the
reply delivered through the ledger.

Used for live messages, the start-up replay and job runs; the caller holds the chat's queue, so one chat's
messages are answered in order. Each reply part goes out with a transaction id made from the item and the
part's index, and is recorded in the ledger as it goes: a crash resends only what is not recorded, and a
part that was out but not yet recorded is the same event again (the homeserver de-duplicates it); so is a live
message a kill left unrecorded, taken over by the restart's reply (``send_reply``). While the
homeserver cannot be reached the reply waits (it is in the inbox) and is retried with backoff until a stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from assistant_framework.config.settings import MatrixSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.media.files_out import FileToSend
from messaging_llm_bot.agent.guard import ApproveCallback
from messaging_llm_bot.channels.contract import Address, DeliveryError, OutgoingFile
from messaging_llm_bot.channels.matrix.channel import MatrixChannel, txn_id
from messaging_llm_bot.channels.matrix.client import MatrixUnavailable
from messaging_llm_bot.channels.matrix.format import CAPABILITIES, edit_content, render_matrix
from messaging_llm_bot.channels.matrix.live import LIVE_NUMBER, MatrixLive, typing
from messaging_llm_bot.channels.matrix.message import MatrixMessage, parse_message
from messaging_llm_bot.channels.matrix.settings import address_of
from messaging_llm_bot.conversation.chat_turns import ChatTurns, ReadInput, Shows, TurnMessage
from messaging_llm_bot.conversation.media_in import attachment_input
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import Received, TurnInput

log = logging.getLogger(__name__)

MAX_FILE_IN_BYTES = 50 * 1024 * 1024  # Synapse's default max_upload_size
UNSUPPORTED = "I cannot take {kind} messages here yet: send text, a picture, a file or a voice message."


class MatrixTurns(ChatTurns):
    """Runs turns for the Matrix channel (conversation/chat_turns.py); one per running channel."""

    platform: MatrixChannel
    SEND_ERRORS = (MatrixUnavailable, DeliveryError)  # unavailable: tried again with backoff
    MAX_FILE_BYTES = CAPABILITIES.max_file_bytes

    def __init__(
        self, runtime: Runtime, inbox: Inbox, channel: MatrixChannel, config: Callable[[], MatrixSettings]
    ) -> None:
        super().__init__(runtime, inbox, "matrix")  # the turns running, the pool, the chat's flags, busy modes
        self.platform = channel
        self._config = config
        self._lives: dict[str, MatrixLive] = {}  # item id -> its turn's live message sent, until the reply takes it

    @property
    def config(self) -> MatrixSettings:
        return self._config()

    def address_of(self, conversation_id: str) -> Address:
        room, thread = address_of(conversation_id)
        return Address(room, thread)

    def message_of(self, item: InboxItem) -> MatrixMessage | None:
        payload = item.payload
        room, event = payload.get("room"), payload.get("event")
        if not isinstance(room, str) or not isinstance(event, dict):
            return None
        return parse_message(room, event, bool(payload.get("direct")), self.platform.client.user_id)

    def message(self, item: InboxItem) -> TurnMessage | None:
        msg = self.message_of(item)
        if msg is None:
            return None
        from_owner = self.config.is_owner(msg.sender)
        owner_chat = msg.direct and from_owner  # only the owner's own direct room sees the owner's data
        received = Received("text", msg.text) if msg.media is None else self._attachment(item, msg, owner_chat)
        return TurnMessage(msg.address, msg.sender, owner_chat, from_owner, received, msg.event_id, joinable(msg))

    def _attachment(self, item: InboxItem, msg: MatrixMessage, owner_chat: bool) -> ReadInput:
        """The message's file (without transcription a voice message is saved like any file)."""

        async def read() -> TurnInput | str:
            media = msg.media
            if media is None or media.kind == "video":
                return UNSUPPORTED.format(kind="video")
            return await attachment_input(
                self,
                item.conversation_id,
                owner_chat,
                media,
                msg.text,
                lambda: self.platform.download(media, MAX_FILE_IN_BYTES),
                lambda _mime: media.name,
            )

        return read

    async def shows(self, item: InboxItem, msg: TurnMessage) -> Shows:
        """Typing, and the answer growing in one message (no status lines)."""
        live = MatrixLive(self.platform, msg.to, item.item_id, lambda sent: self._lives.update({item.item_id: sent}))
        shows = typing(self.platform, msg.to.chat_id, self.config.typing)
        interval = self.config.edit_interval_seconds
        return self.live_progress(item, live, stream=True, edit_interval=interval, show_status=False, typing=shows)

    def approver(self, item: InboxItem, msg: TurnMessage, loop: asyncio.AbstractEventLoop) -> ApproveCallback:
        to = msg.to  # asked in the turn's thread
        return self.platform.approvals.approver(
            to.chat_id, loop, lambda _room, text: self.platform.send_question(to, text)
        )

    async def send_reply(
        self, item: InboxItem, to: Address, reply: str, live: str | None = None, reply_to: str | None = None
    ) -> None:
        """The reply through the ledger (``ChatTurns.send_reply``); a message an earlier process took, with no
        live message recorded nor part sent, takes over the live message a kill may have left: sent again by its
        transaction id, the homeserver gives that event back (or makes one), edited into the first part."""
        if live is None and self.may_have_left_live(item):
            await self.record_live(item.item_id, LIVE_NUMBER)
            live = self.live_ref(LIVE_NUMBER)
        await super().send_reply(item, to, reply, live, reply_to)

    async def edit_live(self, item: InboxItem, to: Address, live: str, reply: str) -> bool:
        """The live message edited into the first part, by a transaction id of the item's (the same edit after a
        crash); one a crash left is found again by its own transaction id (``MatrixLive.taken_over``)."""
        event_id = await (
            self._lives.pop(item.item_id, None) or MatrixLive(self.platform, to, item.item_id)
        ).taken_over()
        first = render_matrix(reply)[0]
        await self.platform.client.send(to.chat_id, edit_content(event_id, first), txn_id(item.item_id, "edit"))
        return True

    def undelivered(self, err: Exception) -> DeliveryError:
        """A notice the homeserver refused (the bot left the room) is refused for good."""
        if isinstance(err, DeliveryError):
            return DeliveryError(f"the homeserver refused it: {err}", for_good=True)
        return super().undelivered(err)

    async def send_workspace_file(self, item: InboxItem, to: Address, one: FileToSend) -> str:
        """The ``send_file`` skill's file into the turn's room (through the media repository); its event id. The
        transaction id is the item's and the file's: the same call after a crash is the same event."""
        out = OutgoingFile("photo" if one.photo else "file", one.path, one.caption)
        sent = await self.platform.send_file(to, out, key=f"{item.item_id}:{one.rel}")
        return sent.message_ids[0]


def joinable(msg: MatrixMessage) -> bool:
    """A turn later messages may join, or a message that may join one (busy modes): a person's own text in a
    direct room (no file, picture or voice message, no command)."""
    return msg.direct and msg.media is None and not msg.text.startswith("/")
