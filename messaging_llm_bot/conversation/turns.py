"""The turns a frontend is running now, so a shutdown can wait for them or cancel them.

Shared by every chat frontend: a cancelled turn completes nothing, so its message stays in the
inbox and is answered at the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any


class RunningTurns:
    """The asyncio tasks answering a message right now."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    @contextlib.contextmanager
    def tracking(self) -> Iterator[None]:
        """Count the current task as a running turn while the block runs."""
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            yield
        finally:
            self._tasks.discard(task)

    def track(self, task: asyncio.Task[Any]) -> None:
        """Count ``task`` as a running turn until it ends (work a turn left to finish beside the next one)."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for running turns, and for what they leave running; True when none
        is left."""
        me = asyncio.current_task()
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            pending = {t for t in self._tasks if t is not me and not t.done()}
            left = deadline - asyncio.get_running_loop().time()
            if not pending or left <= 0:
                return not pending
            await asyncio.wait(pending, timeout=left)

    def cancel_all(self) -> int:
        """Cancel the running turns (their inbox items stay pending); returns how many."""
        running = [t for t in self._tasks if not t.done()]
        for task in running:
            task.cancel()
        return len(running)
