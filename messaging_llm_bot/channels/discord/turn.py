"""Answer one durable inbox item from Discord on conversation/item_turns.py's flow: the agent's turn, its answer
growing in one message while the model writes (edits, conversation/progress.py), then the reply delivered through
the ledger: the live message edited into the first part, the rest sent after it in the same channel.

Every send carries a nonce of the item's (channel.py's ``nonce``): a part, a file or the live message that
reached Discord just before a kill (its ledger record not written) is the same message when the restart sends it
again. A message taken before this process started may have a live message a kill left unrecorded; when the
restarted turn shows none of its own, its reply takes that one over by the same nonce (``send_reply``).

Used for live messages, the start-up replay, job runs and the owner's notices; the caller holds the chat's queue,
so one conversation's messages are answered in order. Each part goes out once and is recorded as it goes: a crash
resends only what is not recorded. While Discord cannot be reached or rate-limits the bot longer than the library
waits, the reply waits (it is in the inbox) and is retried until a stop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from assistant_framework.config.settings import DiscordSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.media.files_out import FileToSend
from messaging_llm_bot.agent.guard import ApproveCallback
from messaging_llm_bot.channels.contract import Address, DeliveryError, OutgoingFile
from messaging_llm_bot.channels.discord.api import DiscordUnavailable
from messaging_llm_bot.channels.discord.channel import DiscordChannel, nonce
from messaging_llm_bot.channels.discord.files import save_files
from messaging_llm_bot.channels.discord.format import CAPABILITIES
from messaging_llm_bot.channels.discord.live import LIVE_PART, DiscordLive
from messaging_llm_bot.channels.discord.message import DiscordMessage, message_of_payload
from messaging_llm_bot.channels.discord.settings import api_url, channel_of
from messaging_llm_bot.conversation.chat_turns import ChatTurns, Shows, TurnMessage
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import Received


def address_of(conversation_id: str) -> Address:
    return Address(channel_of(conversation_id))


class DiscordTurns(ChatTurns):
    """Runs turns for the Discord channel (conversation/chat_turns.py); one per running channel."""

    platform: DiscordChannel
    REREAD = True  # a job run handed over again may have been answered meanwhile
    SEND_ERRORS = (DiscordUnavailable, DeliveryError)  # unavailable: tried again, not before Discord's retry_after
    MAX_FILE_BYTES = CAPABILITIES.max_file_bytes

    def __init__(
        self, runtime: Runtime, inbox: Inbox, channel: DiscordChannel, config: Callable[[], DiscordSettings]
    ) -> None:
        super().__init__(runtime, inbox, "discord")
        self.platform = channel
        self._config = config

    @property
    def config(self) -> DiscordSettings:
        return self._config()

    def address_of(self, conversation_id: str) -> Address:
        return address_of(conversation_id)

    def message(self, item: InboxItem) -> TurnMessage | None:
        msg = message_of_payload(item.payload)
        if msg is None:
            return None
        from_owner = self.config.is_owner(msg.user)
        # Someone's files: outside content, in the chat's own area (the owner's memory in their DM).
        save = save_files(api_url(self.config), msg, self.runtime.settings)
        received = Received("document", save=save) if msg.files else Received("text", msg.text)
        # Only the owner's own DM sees the owner's data.
        return TurnMessage(
            Address(msg.channel),
            msg.user,
            msg.direct and from_owner,
            from_owner,
            received,
            msg.message_id,
            joinable(msg),
        )

    async def shows(self, item: InboxItem, msg: TurnMessage) -> Shows:
        stream = self.config.stream and self.runtime.settings.llm.stream
        live = DiscordLive(self.platform, msg.to.chat_id, item.item_id)
        return self.live_progress(item, live, stream=stream, edit_interval=self.config.edit_interval_seconds)

    def approver(self, item: InboxItem, msg: TurnMessage, loop: asyncio.AbstractEventLoop) -> ApproveCallback:
        return self.platform.approvals.approver(item.conversation_id, loop)

    async def send_reply(
        self, item: InboxItem, to: Address, reply: str, live: str | None = None, reply_to: str | None = None
    ) -> None:
        """The reply through the ledger (``ChatTurns.send_reply``); a message an earlier process took, with no
        live message recorded nor part sent, first takes over the live message a kill may have left."""
        if live is None and self.may_have_left_live(item):
            live = await self._left_live(item, to)
        await super().send_reply(item, to, reply, live, reply_to)

    async def _left_live(self, item: InboxItem, to: Address) -> str:
        """The live message sent by the nonce an earlier process used: the one it left (Discord gives it back
        within its few minutes), else a new one; recorded, and edited into the reply's first part."""
        sent = await self.platform.post(to.chat_id, "…", nonce(item.item_id, LIVE_PART))
        await self.record_live(item.item_id, int(sent))
        return sent

    async def send_workspace_file(self, item: InboxItem, to: Address, one: FileToSend) -> str:
        """The ``send_file`` skill's file; its nonce is the item's and the file's: sent again after a crash (out,
        not yet in the files' ledger), Discord answers with the message it made."""
        out = OutgoingFile("photo" if one.photo else "file", one.path, one.caption)
        sent = await self.platform.send_file(to, out, key=f"{item.item_id}:{one.rel}")
        return sent.message_ids[0]


def joinable(msg: DiscordMessage) -> bool:
    """A turn later messages may join, or a message that may join one (busy modes): a person's own text in a
    DM (a guild's mentions never join; no command, no files)."""
    return msg.direct and not msg.files and not msg.text.startswith("/")
