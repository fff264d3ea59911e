"""A platform's rate budget spent on replies first: an overall limit and one per group, in token buckets.

Platforms allow a bot a few messages a second and fewer in one group (Telegram: about 30 a second, 20 a
minute per group). Counting every call alike lets typing actions and intermediate streaming edits delay the
replies under load, so ``ReplyFirstBudget`` sorts calls in two classes: **replies** wait for the budget in
arrival order; **optional** calls (typing, the progress message and its edits) never wait: they go only while
no reply waits and the budget has room to spare (``reserve``), else the channel skips them. A platform's
"retry after" pauses every call (``pause``). The channel adapter gives the calls' classes and the groups.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

MAX_IDLE_GROUPS = 512  # more groups than this: the idle ones (full buckets) are forgotten


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


class ReplyFirstBudget:
    """The overall and per-group buckets of one bot, with replies first (see the module docstring)."""

    def __init__(self, per_second: float, group_per_minute: float, reserve: float) -> None:
        self.per_second, self.group_per_minute, self.reserve = per_second, group_per_minute, reserve
        self._overall: TokenBucket | None = None  # made on the running loop at first use
        self._groups: dict[object, TokenBucket] = {}
        self._resume_at = 0.0  # monotonic time until which a "retry after" pauses every call
        self.skipped = 0

    def _bucket(self) -> TokenBucket:
        if self._overall is None:
            self._overall = TokenBucket(self.per_second, self.per_second)
        return self._overall

    def _group(self, group: object | None) -> TokenBucket | None:
        if group is None:
            return None  # a one-to-one chat has no limit of its own
        if len(self._groups) > MAX_IDLE_GROUPS:
            for key in [k for k, b in self._groups.items() if b.full()]:
                del self._groups[key]
        bucket = self._groups.get(group)
        if bucket is None:
            bucket = self._groups[group] = TokenBucket(self.group_per_minute / 60.0, self.group_per_minute)
        return bucket

    async def take(self, group: object | None, optional: bool) -> bool:
        """The budget of one call to ``group`` (None: a one-to-one chat): a reply waits for it; an optional
        call never waits and gets False (counted in ``skipped``) when it must give way."""
        bucket = self._group(group)
        if optional:
            if (
                self.paused()
                or (bucket is not None and not bucket.try_take(keep=1))
                or not self._bucket().try_take(keep=self.reserve)
            ):
                self.skipped += 1
                return False
            return True
        if bucket is not None:
            await bucket.take()
        await self._bucket().take()
        return True

    def paused(self) -> bool:
        return time.monotonic() < self._resume_at

    def pause(self, seconds: float) -> None:
        """The platform said to retry after ``seconds``: every call waits that long."""
        self._resume_at = max(self._resume_at, time.monotonic() + seconds)

    async def wait_pause(self) -> None:
        """Wait out a pause before a call."""
        wait = self._resume_at - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
