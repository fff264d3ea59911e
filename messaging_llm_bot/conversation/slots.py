"""At most a few pieces of heavy work at once in the whole process, the rest waiting in the order they came.

Every channel runs on an event loop of its own (conversation/service.py), so the count is kept under a thread
lock and a waiter is woken on its own loop. A wait that runs out, or is cancelled, leaves the line; a slot
handed to it in that instant is passed on, never lost. The work runs in a thread of its own that gives the
slot back when the work ends: a caller cancelled meanwhile (/stop) does not free a slot its work still holds.
A taker may need several slots (work that must run alone takes them all): it waits until that many are free,
and those behind it wait behind it, so it is never overtaken for good.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def _grant(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # a waiter that left meanwhile passes the slot on (Slots.take)
        waiter.set_result(None)


def _succeed(done: asyncio.Future[T], result: T) -> None:
    if not done.done():
        done.set_result(result)


def _fail(done: asyncio.Future[T], error: Exception) -> None:
    if not done.done():
        done.set_exception(error)


class Slots:
    """``size`` slots shared by every event loop of the process, handed out first come, first served."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._free = size
        self._waiting: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None], int]] = deque()

    @property
    def taken(self) -> int:
        """How many slots are held now."""
        with self._lock:
            return self.size - self._free

    async def take(self, seconds: float, count: int = 1) -> bool:
        """Hold ``count`` slots (at most ``size``), waiting behind the earlier takers at most ``seconds``; False
        when the wait ran out."""
        loop = asyncio.get_running_loop()
        count = min(count, self.size)
        with self._lock:
            if self._free >= count and not self._waiting:
                self._free -= count
                return True
            place = (loop, loop.create_future(), count)
            self._waiting.append(place)
        try:
            async with asyncio.timeout(max(0.0, seconds)):
                await place[1]
        except TimeoutError:
            self._leave(place)
            return False
        except BaseException:  # cancelled (a /stop, the channel's stop)
            self._leave(place)
            raise
        return True

    def _leave(self, place: tuple[asyncio.AbstractEventLoop, asyncio.Future[None], int]) -> None:
        """Out of the line; slots handed over as the wait ended go to the next in line."""
        with self._lock:
            if place in self._waiting:
                self._waiting.remove(place)
                self._hand_out()  # those behind a taker of several slots may fit now
                return
        self.give(place[2])

    def give(self, count: int = 1) -> None:
        """Give ``count`` slots back: to the first waiters whose loops still run while they fit, the rest to
        the free count."""
        with self._lock:
            self._free += min(count, self.size)
            self._hand_out()

    def _hand_out(self) -> None:
        """Free slots to the waiters in order while the first fits (called under the lock)."""
        while self._waiting and self._free >= self._waiting[0][2]:
            loop, waiter, count = self._waiting.popleft()
            try:
                loop.call_soon_threadsafe(_grant, waiter)
            except RuntimeError:  # its loop is closed: nobody waits there any more
                continue
            self._free -= count

    async def run(self, seconds: float, work: Callable[[float], T], count: int = 1) -> T | None:
        """``work(seconds_left)`` run in a thread of its own while holding ``count`` slots taken within
        ``seconds``; None when they did not come in time. They are given back when ``work`` returns, whatever
        became of the caller."""
        started = time.monotonic()
        count = min(count, self.size)
        if not await self.take(seconds, count):
            return None
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()

        def in_thread() -> None:
            settle: Callable[[], None]
            try:
                result = context.run(work, max(0.0, seconds - (time.monotonic() - started)))
            except Exception as err:  # noqa: BLE001 - handed to the caller as it is
                settle = functools.partial(_fail, done, err)
            else:
                settle = functools.partial(_succeed, done, result)
            finally:
                self.give(count)
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the caller's loop is closed: nobody waits for the result
                pass

        try:
            threading.Thread(target=in_thread, name="slot-work", daemon=True).start()
        except BaseException:
            self.give(count)
            raise
        return await done
