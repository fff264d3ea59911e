"""Answer one durable inbox item from Discord on conversation/item_turns.py's flow: the agent's turn, its answer
growing in one message while the model writes (edits, conversation/progress.py), then the reply delivered through
the ledger: the live message edited into the first part, the rest sent after it in the same channel.

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
from messaging_llm_bot.agent.guard import ApproveCallback
from messaging_llm_bot.channels.contract import Address, DeliveryError
from messaging_llm_bot.channels.discord.api import DiscordUnavailable
from messaging_llm_bot.channels.discord.channel import DiscordChannel
from messaging_llm_bot.channels.discord.files import save_files
from messaging_llm_bot.channels.discord.format import CAPABILITIES
from messaging_llm_bot.channels.discord.live import DiscordLive
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

    def job_user(self, to: Address) -> str:
        return self.config.owner_id or ""

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
        live = DiscordLive(self.platform, msg.to.chat_id)
        return self.live_progress(item, live, stream=stream, edit_interval=self.config.edit_interval_seconds)

    def approver(self, item: InboxItem, msg: TurnMessage, loop: asyncio.AbstractEventLoop) -> ApproveCallback:
        return self.platform.approvals.approver(item.conversation_id, loop)


def joinable(msg: DiscordMessage) -> bool:
    """A turn later messages may join, or a message that may join one (busy modes): a person's own text in a
    DM (a guild's mentions never join; no command, no files)."""
    return msg.direct and not msg.files and not msg.text.startswith("/")
