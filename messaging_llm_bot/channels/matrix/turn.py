"""Answer one durable inbox item from Matrix: the agent's turn (with typing and the growing answer), then the
reply delivered through the ledger.

Used for live messages, the start-up replay and job runs; the caller holds the chat's queue, so one chat's
messages are answered in order. Each reply part goes out with a transaction id made from the item and the
part's index, and is recorded in the ledger as it goes: a crash resends only what is not recorded, and a
part that was out but not yet recorded is the same event again (the homeserver de-duplicates it). While the
homeserver cannot be reached the reply waits (it is in the inbox) and is retried with backoff until a stop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from assistant_framework.config.settings import MatrixSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.media.files_out import FileToSend
from messaging_llm_bot.channels.contract import Address, DeliveryError, OutgoingFile, TextOut
from messaging_llm_bot.channels.matrix.channel import MatrixChannel, in_thread, txn_id
from messaging_llm_bot.channels.matrix.client import MatrixUnavailable
from messaging_llm_bot.channels.matrix.format import (
    CAPABILITIES,
    MatrixPart,
    edit_content,
    render_matrix,
    text_content,
)
from messaging_llm_bot.channels.matrix.live import LIVE_PART, LiveReply, typing
from messaging_llm_bot.channels.matrix.message import MatrixMessage, parse_message
from messaging_llm_bot.channels.matrix.settings import address_of
from messaging_llm_bot.conversation.files_out import file_sender
from messaging_llm_bot.conversation.item_turns import ItemTurns, SendLater
from messaging_llm_bot.conversation.media_in import attachment_input
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import TurnInput, TurnRequest

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    pass

log = logging.getLogger(__name__)

MAX_FILE_IN_BYTES = 50 * 1024 * 1024  # Synapse's default max_upload_size
UNSUPPORTED = "I cannot take {kind} messages here yet: send text, a picture, a file or a voice message."


class TurnRunner(ItemTurns):
    """Runs turns for the Matrix channel; one per running channel."""

    def __init__(
        self, runtime: Runtime, inbox: Inbox, channel: MatrixChannel, config: Callable[[], MatrixSettings]
    ) -> None:
        super().__init__(runtime, inbox, "matrix")  # the turns running, the pool, the chat's flags, busy modes
        self.platform = channel
        self._config = config

    @property
    def config(self) -> MatrixSettings:
        return self._config()

    def message_of(self, item: InboxItem) -> MatrixMessage | None:
        payload = item.payload
        room, event = payload.get("room"), payload.get("event")
        if not isinstance(room, str) or not isinstance(event, dict):
            return None
        return parse_message(room, event, bool(payload.get("direct")), self.platform.client.user_id)

    async def answer_message(self, item: InboxItem) -> None:
        msg = self.message_of(item)
        if msg is None:  # cannot happen for items this channel wrote
            return await self.unreadable(item)
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []
        live: LiveReply | None = None
        if reply is None:
            shows = typing(self.platform, msg.room_id, self.config.typing)
            live = LiveReply(
                self.platform,
                msg.address,
                item.item_id,
                interval=self.config.edit_interval_seconds,
                on_message=lambda _id: self._live_sent(item),
            )
            shows.start()
            live.start()

            async def after(live: LiveReply = live) -> None:
                await live.stop()
                await shows.stop()

            produce = functools.partial(self._produce, item, msg, live)
            reply, merged, later = await self.make_reply(item, msg.sender, joinable(msg), produce, after=after)
        live_id = live.event_id if live is not None else None
        if await self.deliver(item, msg.address, reply, live_id):
            await self.finish(item, merged, later)  # else stopping: it and the messages it answers stay

    async def _live_sent(self, item: InboxItem) -> None:
        try:
            await asyncio.to_thread(self.inbox.record_live, item.item_id, 1)  # its id: the transaction id's
        except (OSError, KeyError) as err:
            log.warning("matrix: could not record the live message of %s: %s", item.item_id, err)

    async def _produce(self, item: InboxItem, msg: MatrixMessage, live: LiveReply) -> str:
        config = self.config
        owner_chat = msg.direct and config.is_owner(msg.sender)
        got = TurnInput(msg.text)
        if msg.media is not None:  # without transcription a voice message is saved like any file
            media = msg.media
            if media.kind == "video":
                return UNSUPPORTED.format(kind="video")
            read = await attachment_input(
                self,
                item.conversation_id,
                owner_chat,
                media,
                msg.text,
                lambda: self.platform.download(media, MAX_FILE_IN_BYTES),
                lambda _mime: media.name,
            )
            if isinstance(read, str):
                return read
            got = read
        approve = None
        if owner_chat:
            approve = self.platform.approvals.approver(
                msg.room_id,
                asyncio.get_running_loop(),
                lambda _room, text: self.platform.send_question(msg.address, text),
            )
        send_file = file_sender(
            self.runtime.workspace,
            item.item_id,
            asyncio.get_running_loop(),
            lambda one: self._send_workspace_file(msg.address, item.item_id, one),
            CAPABILITIES.max_file_bytes,
        )
        request = TurnRequest(
            item.conversation_id,
            got.text,
            chat_id=item.conversation_id,
            user_id=msg.sender,
            message_id=msg.event_id,
            owner_chat=owner_chat,  # only the owner's own direct room sees the owner's data
            from_owner=config.is_owner(msg.sender),
            untrusted=got.untrusted,
            images=got.images,
            notice=got.notice,
            send_file=send_file,
        )
        return await self.ask_agent(request, approve=approve, on_event=live.on_event)

    async def _send_workspace_file(self, to: Address, key: str, one: FileToSend) -> str:
        """The ``send_file`` skill's file into the turn's room (through the media repository); its event id. The
        transaction id is the item's and the file's: the same call after a crash is the same event."""
        out = OutgoingFile("photo" if one.photo else "file", one.path, one.caption)
        sent = await self.platform.send_file(to, out, key=f"{key}:{one.rel}")
        return sent.message_ids[0]

    async def _say(self, to: Address, text: str) -> None:
        try:
            await self.platform.send_text(to, TextOut(text))
        except (MatrixUnavailable, DeliveryError) as err:
            log.info("matrix: could not say %r in %s: %s", text[:40], to.chat_id, err)

    async def deliver(self, item: InboxItem, to: Address, reply: str, live_id: str | None = None) -> bool:
        """The one delivery path of chat turns and job runs: the parts not in the ledger, each recorded as it
        goes out; a live message (streaming) becomes the first part by an edit. Retries while the homeserver
        cannot be reached; False when stopping first (the item stays)."""

        async def on_part_sent(index: int, _event_id: str) -> None:
            await self.record_part(item.item_id, index, index + 1)  # a resend would be the same event

        async def attempt() -> bool:
            nonlocal live_id
            skip = self.inbox.parts_sent(item.item_id)
            try:
                if skip == 0 and live_id is None and item.live is not None:
                    # a crash left a live message: the same transaction id gives back its event, edited below
                    placeholder = in_thread(text_content(MatrixPart("…")), to)
                    live_id = await self.platform.client.send(to.chat_id, placeholder, txn_id(item.item_id, LIVE_PART))
                if skip == 0 and live_id is not None:
                    first = render_matrix(reply)[0]
                    await self.platform.client.send(
                        to.chat_id, edit_content(live_id, first), txn_id(item.item_id, "edit")
                    )
                    await on_part_sent(0, live_id)
                    skip = 1
                await self.platform.send_text(
                    to, TextOut(reply, skip_parts=skip, on_part_sent=on_part_sent, key=item.item_id)
                )
            except MatrixUnavailable as err:
                raise SendLater(err) from err
            return True

        return await self.deliver_until(item, to.chat_id, attempt)

    async def answer_job(self, item: InboxItem) -> None:
        room, thread = address_of(item.conversation_id)
        to = Address(room, thread)
        await self.run_job(item, room, lambda text: self.deliver(item, to, text), lambda text: self._say(to, text))


def joinable(msg: MatrixMessage) -> bool:
    """A turn later messages may join, or a message that may join one (busy modes): a person's own text in a
    direct room (no file, picture or voice message, no command)."""
    return msg.direct and msg.media is None and not msg.text.startswith("/")
