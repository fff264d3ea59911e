"""Who the Telegram bot serves: the allowlist checked before anything else (bot.py), a stranger's one refusal
(conversation/strangers.py), the owner's own private chat for the owner's data."""

from __future__ import annotations

import logging
from collections.abc import Callable

import telegram
from telegram import Update

from assistant_framework.access import sees_owner_data
from assistant_framework.config.settings import TelegramSettings
from messaging_llm_bot.channels.telegram.settings import addressed_to_bot, for_other_bot, is_command
from messaging_llm_bot.conversation.pairing import Pairing
from messaging_llm_bot.conversation.strangers import Strangers, ToldRecently
from messaging_llm_bot.conversation.strangers import refusal_text as not_allowed

log = logging.getLogger(__name__)


def refusal_text(user_id: int) -> str:
    """The one reply an unknown user gets."""
    return not_allowed(f"Your user id is {user_id}", "telegram.allowed_user_ids", this="this bot")


class Access:
    """The allowlist and the owner's rules, read from the current settings (a ``/reload`` changes them)."""

    def __init__(self, settings: Callable[[], TelegramSettings], pairing: Pairing | None = None) -> None:
        self._settings = settings
        #: What a stranger is told (their id, or a pairing code in a private chat), at most once a minute.
        self.strangers = Strangers("telegram", ToldRecently(), pairing)

    @property
    def settings(self) -> TelegramSettings:
        """The current ``telegram`` settings."""
        return self._settings()

    def allowed(self, user: telegram.User | None) -> bool:
        """Deny by default: only numeric ids in telegram.allowed_user_ids."""
        return user is not None and user.id in self.settings.allowed_user_ids

    def owner_data(self, update: Update) -> bool:
        """True only in the owner's own private chat (assistant_framework.access: the rule of every frontend)."""
        chat = update.effective_chat
        return sees_owner_data(self.from_owner(update), chat is not None and chat.type == "private")

    def from_owner(self, update: Update) -> bool:
        """True when the owner sent the update (in any chat): their turns go first, and are never refused."""
        user = update.effective_user
        return user is not None and user.id == self.settings.owner

    async def refuse(self, update: Update, bot: telegram.Bot) -> None:
        """The one short refusal to an update from a user not allowed (none to an update without a user)."""
        user = update.effective_user
        if user is None:
            return
        try:
            if update.callback_query is not None:
                await update.callback_query.answer(refusal_text(user.id), show_alert=True)
                return
            message = update.message
            if message is None or for_other_bot(message, bot.username):
                return  # /cmd@otherbot: for another bot in the group, not a request to this one
            private = message.chat.type == "private"

            async def say(text: str) -> None:
                await message.reply_text(text, do_quote=not private)

            addressed = is_command(message) or addressed_to_bot(message, bot.username or "", bot.id, "mention")
            await self.strangers.answer(str(user.id), refusal_text(user.id), say, private=private, addressed=addressed)
        except telegram.error.TelegramError as err:
            log.info("telegram: refusal to %s failed: %s", user.id, err)
