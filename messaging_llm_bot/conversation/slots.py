"""At most a few pieces of heavy work at once in the whole process, the rest waiting in the order they came.

Every channel runs on an event loop of its own (conversation/service.py), so the count is kept under a thread
lock and a waiter is woken on its own loop. A wait that runs out, or is cancelled, leaves the line; a slot
handed to it in that instant is passed on, never lost. The work runs in a thread of its own that gives the
slot back when the work ends: a caller cancelled meanwhile (/stop) does not free a slot its work still holds.
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
        self._waiting: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    @property
    def taken(self) -> int:
        """How many slots are held now."""
        with self._lock:
            return self.size - self._free

    async def take(self, seconds: float) -> bool:
        """Hold a slot, waiting behind the earlier takers at most ``seconds``; False when the wait ran out."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free > 0 and not self._waiting:
                self._free -= 1
                return True
            place = (loop, loop.create_future())
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

    def _leave(self, place: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]) -> None:
        """Out of the line; a slot handed over as the wait ended goes to the next in line."""
        with self._lock:
            if place in self._waiting:
                self._waiting.remove(place)
                return
        self.give()

    def give(self) -> None:
        """Give a slot back: to the first waiter whose loop still runs, else to the free count."""
        with self._lock:
            while self._waiting:
                loop, waiter = self._waiting.popleft()
                try:
                    loop.call_soon_threadsafe(_grant, waiter)
                except RuntimeError:  # its loop is closed: nobody waits there any more
                    continue
                return
            self._free += 1

    async def run(self, seconds: float, work: Callable[[float], T]) -> T | None:
        """``work(seconds_left)`` run in a thread of its own while holding a slot taken within ``seconds``; None
        when no slot came in time. The slot is given back when ``work`` returns, whatever became of the caller."""
        started = time.monotonic()
        if not await self.take(seconds):
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
                self.give()
            try:
                loop.call_soon_threadsafe(settle)
            except RuntimeError:  # the caller's loop is closed: nobody waits for the result
                pass

        try:
            threading.Thread(target=in_thread, name="slot-work", daemon=True).start()
        except BaseException:
            self.give()
            raise
        return await done
