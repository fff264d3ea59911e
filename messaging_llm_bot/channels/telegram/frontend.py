"""The Telegram frontend of one runtime: its parts made once, and where each update goes (``dispatch``).

The allowlist gate (telegram/access.py) first; then button presses of confirmations (telegram/approval.py) and of
/reset's question at once (a turn may wait for one); commands and every message the model reads to the shared
intake (telegram/intake.py over conversation/intake.py: a turn in telegram/turn.py); the rest in its chat's queue
(conversation/chatqueue.py: a bound per chat, the owner's turns first). An edited message runs nothing."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import telegram
from telegram import Update

from assistant_framework.config.settings import TelegramSettings
from assistant_framework.inbox import Inbox
from messaging_llm_bot.channels.telegram.access import Access
from messaging_llm_bot.channels.telegram.approval import CALLBACK_PATTERN as APPROVAL_PATTERN
from messaging_llm_bot.channels.telegram.approval import TelegramApprovals
from messaging_llm_bot.channels.telegram.intake import TelegramIntake
from messaging_llm_bot.channels.telegram.settings import chat_of, is_command
from messaging_llm_bot.channels.telegram.turn import TelegramTurns
from messaging_llm_bot.conversation.pairing import Pairing
from messaging_llm_bot.conversation.service import ChannelService

log = logging.getLogger(__name__)


class Frontend:
    """State and dispatch of the Telegram frontend for one runtime, over ``bot``."""

    def __init__(self, service: ChannelService, inbox: Inbox, bot: telegram.Bot) -> None:
        self.runtime = runtime = service.runtime
        self.approvals = TelegramApprovals()
        self.turns = TelegramTurns(runtime, inbox, bot, self.approvals)
        self.tasks = service.tasks  # per chat, in order, bounded, the owner first (conversation/chattasks.py)
        self.access = Access(lambda: self.settings, Pairing(runtime))
        # Held while the inbox cannot store (unconfirmed to Telegram); each chat's queue is its chat's.
        shared = service.channel_intake(self.turns, hold=True, queue_of=chat_of, taken=self.turns.albums.arrived)
        self.intake = TelegramIntake(runtime, self.access, self.turns, shared)
        self.handling: set[asyncio.Task[Any]] = set()  # updates being dispatched (a stop waits for them)

    @property
    def settings(self) -> TelegramSettings:
        """The ``telegram`` record of the runtime's current records: a ``/reload`` (from this chat or another
        frontend) changes the allowlist, the owner and the group mode at once; the keys that need a restart
        keep their running value there (assistant_framework/config/reloadable.py)."""
        return self.runtime.settings.telegram

    def handle(self, update: Update) -> None:
        """``dispatch`` ``update`` in a task of its own; called in arrival order, so the tasks start in it."""
        task = asyncio.get_running_loop().create_task(self._dispatch_logged(update))
        self.handling.add(task)
        task.add_done_callback(self.handling.discard)

    async def _dispatch_logged(self, update: Update) -> None:
        try:
            await self.dispatch(update)
        except Exception:  # noqa: BLE001 - one update that fails must not stop the others
            log.exception("telegram: error while handling update %s", update.update_id)

    async def dispatch(self, update: Update) -> None:
        """One update, concurrent across chats and in arrival order within one (the module docstring)."""
        bot, intake = update.get_bot(), self.intake
        if not self.access.allowed(update.effective_user):
            await self.access.refuse(update, bot)  # a stranger's update takes no place in a chat's queue
            return
        query = update.callback_query
        if query is not None:
            if query.data in ("reset:yes", "reset:no"):
                await intake.on_reset_choice(update)
            elif re.match(APPROVAL_PATTERN, query.data or ""):
                await self.approvals.on_choice(update)
            return
        message = update.message
        if message is None:  # an edit (bot.py's ALLOWED_UPDATES asks for none) or another kind
            return
        if is_command(message):
            await intake.command(update, bot)  # /stop at once, the rest in the chat's order
            return
        # In arrival order: the tasks start in that order and take the lock in that order too.
        async with intake.order:
            if intake.model_bound(update, bot):
                await intake.take(update, bot)
                return
            if self.tasks.spawn(message.chat_id, intake.on_message(update, bot), owner=self.access.from_owner(update)):
                return
        await intake.over_limit(update)
