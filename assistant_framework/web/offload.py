"""Blocking work (files, the store, the index, a search, a collector run) off the page's event loop.

The event loop only parses requests and renders pages; every read or write of the workspace, every
search and every collector run goes to a small thread pool, one per kind of work (a *lane*), so a
slow search does not hold a page's other answers, and nothing waits without bound: a lane has a
fixed number of threads and of requests that may wait for one; past that the request is answered
503 at once. A request whose client went away still finishes its work (a write stays whole); its
place is free when the work ends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


class LaneFull(RuntimeError):
    """Every thread of a lane is busy and its waiting places are taken."""

    def __init__(self, lane: str) -> None:
        super().__init__(f"the page is busy ({lane}): try again in a moment")
        self.lane = lane


@dataclass
class Lane:
    """Threads for one kind of blocking work: ``workers`` at once, ``waiting`` more queued."""

    name: str
    workers: int
    waiting: int
    _taken: int = field(default=0, repr=False)  # only changed on the event loop's thread
    _pool: concurrent.futures.ThreadPoolExecutor | None = field(default=None, repr=False)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in one of the lane's threads; LaneFull at once when the lane is full."""
        if self._taken >= self.workers + self.waiting:
            raise LaneFull(self.name)
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix=f"web-{self.name}")
        self._taken += 1
        try:
            return await asyncio.wrap_future(self._pool.submit(fn, *args))
        finally:
            self._taken -= 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class Offload:
    """The page's lanes: searches, file and store work, collector runs (up to their own timeout)."""

    search: Lane = field(default_factory=lambda: Lane("search", workers=2, waiting=4))
    files: Lane = field(default_factory=lambda: Lane("files", workers=4, waiting=32))
    runs: Lane = field(default_factory=lambda: Lane("collector runs", workers=2, waiting=2))

    def close(self) -> None:
        for lane in (self.search, self.files, self.runs):
            lane.close()
