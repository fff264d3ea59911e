"""Asking the owner in Telegram to confirm a skill call the policy marks ``ask``.

The agent runs in a worker thread and calls ``approve(request)``; this module
turns that into a message with Confirm / Decline buttons on the bot's event loop and
waits for the press (callback queries bypass the per-chat ordering, so the press is
handled while the turn waits). A call that asks only because outside content is in view
gets a third button, "Allow for this conversation" (``ALLOW_CONVERSATION``). No answer
within the timeout means no.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from typing import Any, Callable

import telegram
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from messaging_llm_bot.agent.guard import ALLOW_CONVERSATION

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 300.0
CALLBACK_PATTERN = r"^approve:[0-9a-f]+:(yes|no|chat)$"
#: Said under the question when "allow for this conversation" is offered.
CONVERSATION_NOTE = (
    "Allow for this conversation: this skill's calls then run without asking while the outside content "
    "named above is all that is in view; new outside content asks again, /reset ends it."
)


def describe_request(request: dict[str, Any]) -> str:
    """The question shown to the owner: which skill, what it would do, and why it asks."""
    args = json.dumps(request.get("args") or {}, ensure_ascii=False)
    if len(args) > 600:
        args = args[:600] + "…"
    text = (
        f"Confirm this action?\n\nskill: {request.get('skill')}\nargs: {args}\n\n"
        f"Why I ask: {request.get('reason', 'the policy asks for confirmation')}."
    )
    return text + (f"\n\n{CONVERSATION_NOTE}" if request.get("allow_conversation") else "")


class Approvals:
    """Pending confirmations, keyed by a random token carried in the button data."""

    def __init__(self, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.timeout_seconds = timeout_seconds
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._chats: dict[str, int] = {}  # token -> chat, so /stop can decline a chat's open questions
        self._offers: set[str] = set()  # tokens whose question offers "allow for this conversation"

    def approver(
        self, bot: telegram.Bot, chat_id: int, loop: asyncio.AbstractEventLoop, topic: int | None = None
    ) -> Callable[[dict[str, Any]], bool | str]:
        """A blocking callback for the agent's worker thread (asking in ``topic`` when the message came from one)."""

        def approve(request: dict[str, Any]) -> bool | str:
            future = asyncio.run_coroutine_threadsafe(self.ask(bot, chat_id, request, topic), loop)
            try:
                return future.result(self.timeout_seconds + 30)
            except Exception:  # noqa: BLE001 - fail closed
                log.exception("telegram: confirmation in chat %s failed", chat_id)
                return False

        return approve

    async def ask(
        self, bot: telegram.Bot, chat_id: int, request: dict[str, Any], topic: int | None = None
    ) -> bool | str:
        """Send the question with buttons and wait for the owner's press (False on timeout)."""
        token = secrets.token_hex(6)
        future = asyncio.get_running_loop().create_future()
        self._pending[token] = future
        self._chats[token] = chat_id
        rows = [
            [
                InlineKeyboardButton("✅ Confirm", callback_data=f"approve:{token}:yes"),
                InlineKeyboardButton("✖ Decline", callback_data=f"approve:{token}:no"),
            ]
        ]
        if request.get("allow_conversation"):
            self._offers.add(token)
            rows.append([InlineKeyboardButton("🔓 Allow for this conversation", callback_data=f"approve:{token}:chat")])
        keyboard = InlineKeyboardMarkup(rows)
        try:
            message = await bot.send_message(
                chat_id, describe_request(request), reply_markup=keyboard, message_thread_id=topic
            )
        except TelegramError:
            self._pending.pop(token, None)
            log.exception("telegram: could not ask for confirmation in chat %s", chat_id)
            return False
        try:
            return await asyncio.wait_for(future, self.timeout_seconds)
        except asyncio.TimeoutError:
            try:
                await bot.edit_message_text(
                    "No answer in time: not done.", chat_id=chat_id, message_id=message.message_id
                )
            except TelegramError:
                pass
            return False
        finally:
            self._pending.pop(token, None)
            self._chats.pop(token, None)
            self._offers.discard(token)

    def decline_all(self, chat_id: int) -> int:
        """Answer no to every open question in this chat (the owner stopped the turn); returns how many."""
        declined = 0
        for token, chat in list(self._chats.items()):
            future = self._pending.get(token)
            if chat == chat_id and future is not None and not future.done():
                future.set_result(False)
                declined += 1
        return declined

    async def on_choice(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Resolve the pending confirmation a button press belongs to."""
        query = update.callback_query
        _, token, choice = (query.data or "").split(":")
        future = self._pending.get(token)
        await query.answer()
        if future is None or future.done():
            await _edit(query, "This question has expired.")
            return
        if choice == "chat" and token in self._offers:
            future.set_result(ALLOW_CONVERSATION)
            await _edit(query, "Allowed for this conversation: doing it.")
            return
        future.set_result(choice in ("yes", "chat"))  # "chat" on a question that did not offer it: this call only
        await _edit(query, "Declined: not done." if choice == "no" else "Confirmed: doing it.")


async def _edit(query: Any, text: str) -> None:
    try:
        await query.edit_message_text(text)
    except TelegramError:
        pass
