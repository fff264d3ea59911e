"""Telegram's rate budget spent on replies first (conversation/ratelimit.py), as python-telegram-bot's rate limiter
(docs/telegram.md, "Replies"): PTB's ``AIORateLimiter`` counted every call alike, so typing and streaming edits
delayed replies under load. **Optional** calls (``sendChatAction``, calls with ``rate_limit_args={"optional":
True}``) raise ``BudgetSkipped`` at once when they must give way; a ``RetryAfter`` pauses every call.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any

from telegram.error import RetryAfter, TelegramError
from telegram.ext import BaseRateLimiter

from messaging_llm_bot.conversation.ratelimit import ReplyFirstBudget

log = logging.getLogger(__name__)

MESSAGES_PER_SECOND = 30.0
GROUP_MESSAGES_PER_MINUTE = 20.0
RESERVE = 10  # budget an optional call must leave for replies (a third of a second's worth)
OPTIONAL = {"optional": True}
_ALWAYS_OPTIONAL = frozenset({"sendChatAction"})


class BudgetSkipped(TelegramError):
    """An optional call (typing, progress edit) was not sent: replies need the rate budget now."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(f"{endpoint} skipped: the rate budget is kept for replies")


def retry_after_seconds(value: int | float | timedelta) -> float:
    """Normalise ``RetryAfter.retry_after`` (an int or, with PTB_TIMEDELTA, a timedelta) to seconds."""
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def optional_call(bot: Any) -> dict[str, Any]:
    """Keyword arguments that mark a Bot call optional (empty when the bot has no such limiter)."""
    return (
        {"rate_limit_args": OPTIONAL} if isinstance(getattr(bot, "rate_limiter", None), ReplyFirstRateLimiter) else {}
    )


def group_of(chat_id: Any) -> object | None:
    """The group a call's ``chat_id`` limits (a group's negative id, a channel's ``@name``); None for a private chat."""
    with contextlib.suppress(TypeError, ValueError):
        chat_id = int(chat_id)
    return chat_id if (isinstance(chat_id, int) and chat_id < 0) or isinstance(chat_id, str) else None


class ReplyFirstRateLimiter(BaseRateLimiter[dict[str, Any]]):
    """Telegram's limits with replies first; see the module docstring."""

    def __init__(
        self,
        per_second: float = MESSAGES_PER_SECOND,
        group_per_minute: float = GROUP_MESSAGES_PER_MINUTE,
        reserve: float = RESERVE,
    ) -> None:
        self.budget = ReplyFirstBudget(per_second, group_per_minute, reserve)

    async def initialize(self) -> None:
        """Buckets are made on the running loop at first use."""

    async def shutdown(self) -> None:
        """Nothing to free."""

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, Any]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: dict[str, Any] | None,
    ) -> Any:
        """Apply the limits to one Bot API call (see the module docstring)."""
        chat_id = data.get("chat_id")
        optional = endpoint in _ALWAYS_OPTIONAL or bool((rate_limit_args or {}).get("optional"))
        # Not a message to a chat (getMe, setMyCommands, answerCallbackQuery...): no budget of its own.
        if chat_id is not None and not await self.budget.take(group_of(chat_id), optional):
            raise BudgetSkipped(endpoint)
        await self.budget.wait_pause()
        try:
            return await callback(*args, **kwargs)
        except RetryAfter as exc:
            seconds = retry_after_seconds(exc.retry_after)
            self.budget.pause(seconds + 0.1)
            log.info("telegram: flood wait of %.1f s; pausing all calls", seconds)
            raise
