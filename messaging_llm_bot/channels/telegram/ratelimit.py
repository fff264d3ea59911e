"""Telegram's rate budget spent on replies first.

Telegram allows a bot about 30 messages a second (and 20 a minute per group). python-telegram-bot's
``AIORateLimiter`` counts every call alike, so typing actions and intermediate streaming edits took
two of every three calls and delayed replies under load. ``ReplyFirstRateLimiter`` keeps the same
limits but sorts calls in two classes:

- **replies** (everything by default: ``sendMessage``, the final edit, deletes, answers to buttons)
  wait for the budget in arrival order;
- **optional** calls (``sendChatAction``, and calls made with ``rate_limit_args={"optional": True}``:
  the progress message and its intermediate edits) never wait: they go only while no reply waits and
  the budget has room to spare (``reserve``); otherwise they raise ``BudgetSkipped`` at once and the
  caller moves on. So they never delay a final reply.

A ``RetryAfter`` from Telegram pauses every call for the time it names and is raised to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from telegram.error import RetryAfter, TelegramError
from telegram.ext import BaseRateLimiter

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


class TokenBucket:
    """``rate`` tokens a second up to ``capacity``; ``take()`` waits in arrival order."""

    def __init__(self, rate: float, capacity: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.capacity, self._clock = float(rate), float(capacity), clock
        self.tokens = float(capacity)
        self._stamp = clock()
        self.waiting = 0
        self._lock = asyncio.Lock()  # FIFO: waiters are woken in the order they came

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.capacity, self.tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    def full(self) -> bool:
        """True when the bucket is at capacity and nobody waits (an idle group's bucket can go)."""
        self._refill()
        return not self.waiting and self.tokens >= self.capacity

    def try_take(self, keep: float = 0.0) -> bool:
        """Take a token now if nobody waits and ``keep`` tokens remain after it; never waits."""
        self._refill()
        if self.waiting or self.tokens < 1 + keep:
            return False
        self.tokens -= 1
        return True

    async def take(self) -> None:
        """Take a token, waiting behind earlier callers."""
        self.waiting += 1
        try:
            async with self._lock:
                self._refill()
                while self.tokens < 1:
                    await asyncio.sleep((1 - self.tokens) / self.rate)
                    self._refill()
                self.tokens -= 1
        finally:
            self.waiting -= 1


def is_optional(endpoint: str, rate_limit_args: Any) -> bool:
    """True for calls that may be skipped under load (typing, progress message and edits)."""
    if endpoint in _ALWAYS_OPTIONAL:
        return True
    return isinstance(rate_limit_args, dict) and bool(rate_limit_args.get("optional"))


def optional_call(bot: Any) -> dict[str, Any]:
    """Keyword arguments that mark a Bot call optional (empty when the bot has no such limiter)."""
    return (
        {"rate_limit_args": OPTIONAL} if isinstance(getattr(bot, "rate_limiter", None), ReplyFirstRateLimiter) else {}
    )


class ReplyFirstRateLimiter(BaseRateLimiter[dict[str, Any]]):
    """Telegram's limits with replies first; see the module docstring."""

    def __init__(
        self,
        per_second: float = MESSAGES_PER_SECOND,
        group_per_minute: float = GROUP_MESSAGES_PER_MINUTE,
        reserve: float = RESERVE,
    ) -> None:
        self.per_second, self.group_per_minute, self.reserve = per_second, group_per_minute, reserve
        self._overall: TokenBucket | None = None
        self._groups: dict[Any, TokenBucket] = {}
        self._resume_at = 0.0  # monotonic time until which a RetryAfter pauses every call
        self.skipped = 0

    async def initialize(self) -> None:
        """Buckets are made on the running loop at first use."""

    async def shutdown(self) -> None:
        """Nothing to free."""

    def _bucket(self) -> TokenBucket:
        if self._overall is None:
            self._overall = TokenBucket(self.per_second, self.per_second)
        return self._overall

    def _group(self, chat_id: Any) -> TokenBucket | None:
        with contextlib.suppress(TypeError, ValueError):
            chat_id = int(chat_id)
        if not ((isinstance(chat_id, int) and chat_id < 0) or isinstance(chat_id, str)):
            return None  # private chats have no per-chat limit of their own
        if len(self._groups) > 512:  # forget idle groups (full buckets)
            for key in [k for k, b in self._groups.items() if b.full()]:
                del self._groups[key]
        bucket = self._groups.get(chat_id)
        if bucket is None:
            bucket = self._groups[chat_id] = TokenBucket(self.group_per_minute / 60.0, self.group_per_minute)
        return bucket

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
        if chat_id is None:  # not a message to a chat (getMe, setMyCommands, answerCallbackQuery...)
            return await self._call(callback, args, kwargs)
        group = self._group(chat_id)
        if is_optional(endpoint, rate_limit_args):
            if (
                self._paused()
                or (group is not None and not group.try_take(keep=1))
                or not self._bucket().try_take(keep=self.reserve)
            ):
                self.skipped += 1
                raise BudgetSkipped(endpoint)
            return await self._call(callback, args, kwargs)
        if group is not None:
            await group.take()
        await self._bucket().take()
        return await self._call(callback, args, kwargs)

    def _paused(self) -> bool:
        return time.monotonic() < self._resume_at

    async def _call(self, callback: Callable[..., Coroutine[Any, Any, Any]], args: Any, kwargs: dict[str, Any]) -> Any:
        wait = self._resume_at - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        try:
            return await callback(*args, **kwargs)
        except RetryAfter as exc:
            seconds = (
                exc.retry_after.total_seconds() if hasattr(exc.retry_after, "total_seconds") else float(exc.retry_after)
            )
            self._resume_at = max(self._resume_at, time.monotonic() + seconds + 0.1)
            log.info("telegram: flood wait of %.1f s; pausing all calls", seconds)
            raise
