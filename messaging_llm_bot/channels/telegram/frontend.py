"""The Telegram frontend of one runtime: its parts made once and their handlers added to the Application.

The allowlist gate (telegram/access.py) runs before every handler; button presses of confirmations
(telegram/approval.py) and of /reset's question; commands and every message the model reads through the shared
intake (telegram/intake.py over conversation/intake.py: a turn in telegram/turn.py), in its chat's queue
(conversation/chatqueue.py), never through a handler (telegram/updates.py hands them over)."""

from __future__ import annotations

from telegram import Update
from telegram.ext import Application, CallbackQueryHandler, MessageHandler, TypeHandler, filters

from assistant_framework.config.settings import TelegramSettings
from assistant_framework.inbox import Inbox
from messaging_llm_bot.channels.telegram.access import Access
from messaging_llm_bot.channels.telegram.approval import CALLBACK_PATTERN as APPROVAL_PATTERN
from messaging_llm_bot.channels.telegram.approval import TelegramApprovals
from messaging_llm_bot.channels.telegram.intake import TelegramIntake
from messaging_llm_bot.channels.telegram.settings import chat_of
from messaging_llm_bot.channels.telegram.turn import TelegramTurns
from messaging_llm_bot.conversation.pairing import Pairing
from messaging_llm_bot.conversation.service import ChannelService


class Frontend:
    """State and handlers of the Telegram frontend for one runtime."""

    def __init__(self, service: ChannelService, inbox: Inbox) -> None:
        self.runtime = runtime = service.runtime
        self.approvals = TelegramApprovals()
        self.turns = TelegramTurns(runtime, inbox, lambda: self.settings, self.approvals)
        self.queues = service.queues  # per chat, in order, bounded, the owner first (conversation/chatqueue.py)
        self.access = Access(lambda: self.settings, Pairing(runtime))
        # Held while the inbox cannot store (unconfirmed to Telegram); each chat's queue is its chat's.
        shared = service.channel_intake(self.turns, hold=True, queue_of=chat_of, taken=self.turns.albums.arrived)
        self.intake = TelegramIntake(runtime, self.access, self.turns, shared)

    @property
    def settings(self) -> TelegramSettings:
        """The ``telegram`` record of the runtime's current records: a ``/reload`` (from this chat or another
        frontend) changes the allowlist, the owner and the group mode at once; the keys that need a restart
        keep their running value there (assistant_framework/config/reloadable.py)."""
        return self.runtime.settings.telegram

    def register(self, app: Application) -> None:
        """Add the gate, the buttons' and the unread messages' handlers to ``app`` (an edited message runs none)."""
        self.turns.bot = app.bot
        app.add_handler(TypeHandler(Update, self.access.gate), group=-2)
        app.add_handler(CallbackQueryHandler(self.intake.on_reset_choice, pattern=r"^reset:(yes|no)$"))
        app.add_handler(CallbackQueryHandler(self.approvals.on_choice, pattern=APPROVAL_PATTERN))
        app.add_handler(MessageHandler(filters.UpdateType.MESSAGE, self.intake.on_message))
