"""Telegram's part of approvals (conversation/approvals.py has the rest): the question with Confirm / Decline
buttons (and "Allow for this conversation" where offered), in the message's topic, and the press that answers it:
handled at once, beside the chat's order, while the turn waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable

import telegram
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.error import TelegramError

from messaging_llm_bot.agent.guard import ApprovalRequest
from messaging_llm_bot.conversation.approvals import ALLOWANCE, Answer, OpenQuestions, question_parts
from messaging_llm_bot.conversation.delivery import DeliveryError

log = logging.getLogger(__name__)

CALLBACK_PATTERN = r"^approve:[0-9a-f]+:(yes|no|chat)$"
#: Said under the question when "allow for this conversation" is offered.
CONVERSATION_NOTE = f"Allow for this conversation: {ALLOWANCE}."


class TelegramApprovals:
    """Open questions, keyed by a random token carried in the button data."""

    def __init__(self) -> None:
        self.questions = OpenQuestions()

    def approver(
        self, bot: telegram.Bot, chat_id: int, loop: asyncio.AbstractEventLoop, topic: int | None = None
    ) -> Callable[[ApprovalRequest], Answer]:
        """A blocking callback for the agent's worker thread (asking in ``topic`` when the message came from one)."""
        return self.questions.approver(lambda request: self.ask(bot, chat_id, request, topic), loop, f"chat {chat_id}")

    async def ask(self, bot: telegram.Bot, chat_id: int, request: ApprovalRequest, topic: int | None = None) -> Answer:
        """Send the question with buttons and wait for the owner's press (False on timeout: the message says so;
        the press's handler shows what was chosen)."""
        token = secrets.token_hex(6)

        async def post(offers: bool) -> telegram.Message:
            labels = {"yes": "✅ Confirm", "no": "✖ Decline", "chat": "🔓 Allow for this conversation"}
            button = {
                k: InlineKeyboardButton(label, callback_data=f"approve:{token}:{k}") for k, label in labels.items()
            }
            rows = [[button["yes"], button["no"]], *([[button["chat"]]] if offers else [])]
            *earlier, last = question_parts(request, CONVERSATION_NOTE if offers else "")
            try:
                for part in earlier:  # a long question: its arguments whole, the buttons under the last part
                    await bot.send_message(chat_id, part, message_thread_id=topic)
                return await bot.send_message(
                    chat_id, last, reply_markup=InlineKeyboardMarkup(rows), message_thread_id=topic
                )
            except TelegramError as err:
                raise DeliveryError(str(err)) from err

        async def show(message: telegram.Message, answer: Answer | None, unanswered: str) -> None:
            if answer is None:
                with contextlib.suppress(TelegramError):
                    await bot.edit_message_text(unanswered, chat_id=chat_id, message_id=message.message_id)

        return await self.questions.ask_with_buttons(token, chat_id, request, post, show, "telegram")

    async def on_choice(self, update: Update) -> None:
        """Resolve the open question a button press belongs to."""
        query = update.callback_query
        _, token, choice = (query.data or "").split(":")
        await query.answer()
        text = self.questions.press(token, choice)
        with contextlib.suppress(TelegramError):
            await query.edit_message_text(text)
