"""Slash commands in a Signal chat: ``/stop`` at once, the rest in the chat's order (conversation/commands.py
has their texts, the same as Telegram's)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from assistant_framework.config.settings import SignalSettings
from messaging_llm_bot.channels.signal.identity import Identities
from messaging_llm_bot.channels.signal.settings import SignalMessage
from messaging_llm_bot.conversation import commands as texts
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.runtime import Runtime


def is_command(msg: SignalMessage) -> bool:
    """A text message starting with ``/``."""
    return msg.kind() == "text" and msg.text.startswith("/")


def is_stop(msg: SignalMessage) -> bool:
    """``/stop``: about the turn the chat's queue waits for, so it is not queued behind it."""
    return msg.text.strip()[1:].partition(" ")[0].lower() == "stop"


class Commands:
    """Answers a chat's commands; the owner-only ones (/now, /reload, /stats, /status details) only in the
    owner's own direct chat, by the same rule as Telegram (assistant_framework.access)."""

    def __init__(
        self,
        runtime: Runtime,
        identities: Identities,
        approvals: ReplyApprovals,
        settings: Callable[[], SignalSettings],
        say: Callable[[SignalMessage, str], Awaitable[None]],
    ) -> None:
        self.runtime = runtime
        self.identities = identities
        self.approvals = approvals
        self._settings = settings
        self._say = say

    async def stop_turn(self, msg: SignalMessage) -> None:
        """Stop the turn running in this chat; an open confirmation question counts as declined."""
        stopped = self.runtime.agent.stop(msg.conversation_id)
        if stopped:
            self.approvals.resolve(msg.chat, "no")
        await self._say(msg, texts.STOPPING_TEXT if stopped else texts.NOTHING_TO_STOP_TEXT)

    async def answer(self, msg: SignalMessage) -> None:
        """Run the command in ``msg`` and send its text."""
        owner_chat = self.identities.judge(msg, self._settings()).owner_chat(msg)
        # The same owner-only rule as Telegram (assistant_framework.access): /now, /reload, /stats and /status
        # details only in the owner's own direct chat.
        reply = await asyncio.to_thread(
            texts.command_reply, self.runtime, msg.conversation_id, msg.text, owner_data=owner_chat
        )
        await self._say(msg, reply)
