"""Telegram's live message for the conversation service's progress (conversation/progress.py): typing, the
status line and the streamed answer by edits, as optional calls that give way to replies under load."""

from __future__ import annotations

import telegram
from telegram.error import TelegramError

from messaging_llm_bot.channels.telegram.format import MAX_MESSAGE_UTF16
from messaging_llm_bot.channels.telegram.ratelimit import BudgetSkipped, optional_call
from messaging_llm_bot.channels.telegram.send import edit_text_safely
from messaging_llm_bot.conversation.markup import fit_text
from messaging_llm_bot.conversation.progress import BestEffortLive


class TelegramLive(BestEffortLive):
    """The live message in one chat (and forum topic), best effort: a call skipped under load unlogged."""

    def __init__(self, bot: telegram.Bot, chat_id: int, topic: int | None = None) -> None:
        where = f"telegram: the live message in chat {chat_id}"
        super().__init__(BotApiLive(bot, chat_id, topic), where, (TelegramError,), quiet=(BudgetSkipped,))


class BotApiLive:
    """The live message's Bot API calls, raising its errors."""

    def __init__(self, bot: telegram.Bot, chat_id: int, topic: int | None = None) -> None:
        self.bot, self.chat_id, self.topic = bot, chat_id, topic

    def fit(self, text: str) -> str:
        return fit_text(text, MAX_MESSAGE_UTF16)

    async def send(self, text: str) -> int | None:
        optional = optional_call(self.bot)  # under load the reply itself is sent instead, as one message
        sent = await self.bot.send_message(self.chat_id, text, message_thread_id=self.topic, **optional)
        return int(sent.message_id)

    async def edit(self, message_id: int, text: str) -> bool:
        return await edit_text_safely(self.bot, self.chat_id, message_id, text, optional=True)

    async def typing(self) -> None:
        await self.bot.send_chat_action(
            self.chat_id, telegram.constants.ChatAction.TYPING, message_thread_id=self.topic
        )

    async def delete(self, message_id: int) -> bool:
        await self.bot.delete_message(self.chat_id, message_id)
        return True
