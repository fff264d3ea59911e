"""Telegram's live message for the conversation service's progress (conversation/progress.py): typing, the
status line and the streamed answer by edits, as optional calls that give way to replies under load."""

from __future__ import annotations

import logging

import telegram

from messaging_llm_bot.channels.telegram.format import MAX_MESSAGE_UTF16
from messaging_llm_bot.channels.telegram.ratelimit import BudgetSkipped, optional_call
from messaging_llm_bot.channels.telegram.send import edit_text_safely
from messaging_llm_bot.conversation.markup import fit_text

log = logging.getLogger(__name__)


class TelegramLive:
    """The live message's calls in one chat (and forum topic)."""

    def __init__(self, bot: telegram.Bot, chat_id: int, topic: int | None = None) -> None:
        self.bot, self.chat_id, self.topic = bot, chat_id, topic

    def fit(self, text: str) -> str:
        return fit_text(text, MAX_MESSAGE_UTF16)

    async def send(self, text: str) -> int | None:
        try:
            # Optional: under load the reply itself is sent instead, as one message.
            msg = await self.bot.send_message(
                self.chat_id, text, message_thread_id=self.topic, **optional_call(self.bot)
            )
        except BudgetSkipped:
            return None
        except telegram.error.TelegramError as err:
            log.info("telegram: status message in chat %s failed: %s", self.chat_id, err)
            return None
        return int(msg.message_id)

    async def edit(self, message_id: int, text: str) -> bool:
        return await edit_text_safely(self.bot, self.chat_id, message_id, text, optional=True)

    async def typing(self) -> None:
        try:
            await self.bot.send_chat_action(
                self.chat_id, telegram.constants.ChatAction.TYPING, message_thread_id=self.topic
            )
        except BudgetSkipped:
            pass  # replies need the budget now; the next refresh tries again
        except telegram.error.TelegramError as err:
            log.debug("telegram: typing action in chat %s failed: %s", self.chat_id, err)

    async def delete(self, message_id: int) -> bool:
        try:
            await self.bot.delete_message(self.chat_id, message_id)
        except telegram.error.TelegramError as err:
            log.info("telegram: could not delete status message %s in chat %s: %s", message_id, self.chat_id, err)
        return True  # given up either way: the reply is sent whole after it
