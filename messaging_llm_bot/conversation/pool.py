"""The thread pool turns run on, sized from the configuration so ``llm.max_concurrency`` is what limits.

``asyncio.to_thread`` uses the loop's default pool of min(32, cores + 4) threads: 6 on a 2-core
machine, so at a model concurrency of 8 or 32 no more than 6 turns ever reached the model. Turns
hold their thread for the whole turn (model calls, skills, waiting for a model slot), so the pool
has one thread per model slot plus ``SKILL_ROOM`` for turns busy with skills or recall. Every chat
frontend runs its turns here (a turn in the loop's default pool also held back the frontend's own
small jobs, such as writing the inbox), and its chat queues start at most that many at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from assistant_framework.config.settings import Settings
from messaging_llm_bot.llm.slots import owner_calls

log = logging.getLogger(__name__)

SKILL_ROOM = 4
T = TypeVar("T")


def pool_size(settings: Settings) -> int:
    """Threads for turns: the model concurrency (``llm.max_concurrency``) plus room for turns in skills."""
    return max(1, settings.llm.max_concurrency) + SKILL_ROOM


class TurnPool:
    """A ThreadPoolExecutor that follows the config (a /reload that changes the concurrency resizes it)."""

    def __init__(self, settings_ref: Callable[[], Settings]) -> None:
        self._settings_ref = settings_ref
        self._size = 0
        self._executor: ThreadPoolExecutor | None = None

    @property
    def size(self) -> int:
        return self._size

    def executor(self) -> ThreadPoolExecutor:
        """The current executor; a new one when the configured size changed (the old one finishes its work)."""
        size = pool_size(self._settings_ref())
        if self._executor is None or size != self._size:
            old, self._executor, self._size = self._executor, ThreadPoolExecutor(size, "turn"), size
            if old is not None:
                log.info("turn pool resized to %d threads", size)
                old.shutdown(wait=False)
        return self._executor

    async def run(self, fn: Callable[..., T], *args: Any, owner_turn: bool = False, **kwargs: Any) -> T:
        """Run ``fn`` in the pool with the caller's context variables (as ``asyncio.to_thread`` does);
        ``owner_turn``: the owner's turn, whose model calls go first (``llm.slots.owner_calls``)."""
        call = functools.partial(contextvars.copy_context().run, _turn, owner_turn, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self.executor(), call)

    def shutdown(self) -> None:
        """Stop taking work; threads still in a turn finish on their own."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


def _turn(owner_turn: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    with owner_calls() if owner_turn else contextlib.nullcontext():
        return fn(*args, **kwargs)
