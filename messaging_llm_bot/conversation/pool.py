"""The thread pool turns run on, sized from the configuration so ``llm.max_concurrency`` is what limits.

``asyncio.to_thread`` uses the loop's default pool of min(32, cores + 4) threads: 6 on a 2-core
machine, so at a model concurrency of 8 or 32 no more than 6 turns ever reached the model. Turns
hold their thread for the whole turn (model calls, skills, waiting for a model slot), so the pool
has one thread per model slot plus ``SKILL_ROOM`` for turns busy with skills or recall. Every chat
frontend runs its turns here (a turn in the loop's default pool also held back the frontend's own
small jobs, such as writing the inbox), and its chat queues start at most that many at once.

At a channel's stop the pool knows the calls in its threads and how to stop each (the agent's stop switch of the
turn's conversation): a stop that gives up on the turns stops their calls too (a model call is hung up at once),
and the channel waits a bound for its threads before its event loop closes, so no turn thread outlives the loop
it reports to.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from assistant_framework.config.settings import Settings
from messaging_llm_bot.llm.slots import owner_calls

log = logging.getLogger(__name__)

SKILL_ROOM = 4
#: What the trace of a turn the channel's stop gave up on says (``Agent.stop``'s ``why``).
GIVEN_UP = "stopped: the bot stopped before the turn ended"
#: At a stop, how long a channel waits for the calls still in its turn threads once they were told to stop
#: (a model call ends at once; a skill already running finishes), before its event loop closes without them.
STOP_WAIT_SECONDS = 5.0
#: How often a stop that waits for the calls tells them again: a call just starting (waiting for its
#: conversation's lock) has no stop switch yet when first told.
STOP_AGAIN_SECONDS = 0.1
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
        self._calls: dict[int, Callable[[], object]] = {}  # the calls in the threads now, and how to stop each
        self._changed = threading.Condition()  # guards ``_calls`` and ``_stopped``; notified as a call ends
        self._numbers = itertools.count()
        self._stopped = False  # the channel gave up on its turns: a call that starts now does not run

    @property
    def running(self) -> int:
        """How many calls are in the pool's threads now."""
        with self._changed:
            return len(self._calls)

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

    async def run(
        self,
        fn: Callable[..., T],
        *args: Any,
        owner_turn: bool = False,
        stop: Callable[[], object] = lambda: None,
        **kwargs: Any,
    ) -> T:
        """Run ``fn`` in the pool with the caller's context variables (as ``asyncio.to_thread`` does);
        ``owner_turn``: the owner's turn, whose model calls go first (``llm.slots.owner_calls``); ``stop``:
        how a stop ends the call early (the agent's stop of its conversation)."""
        turn = functools.partial(self._turn, stop, owner_turn, fn, *args, **kwargs)
        call = functools.partial(contextvars.copy_context().run, turn)
        return await asyncio.get_running_loop().run_in_executor(self.executor(), call)

    def _turn(self, stop: Callable[[], object], owner_turn: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        number = next(self._numbers)
        with self._changed:
            if self._stopped:  # the pool's work was cancelled, but this one had just been taken
                raise RuntimeError("the channel stopped: its turn pool runs no more calls")
            self._calls[number] = stop
        try:
            with owner_calls() if owner_turn else contextlib.nullcontext():
                return fn(*args, **kwargs)
        finally:
            with self._changed:
                del self._calls[number]
                self._changed.notify_all()

    def shutdown(self) -> None:
        """Stop taking work; threads still in a turn finish on their own."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def stop_calls(self) -> int:
        """Stop taking work and tell every call in the pool's threads to stop (the channel gave up on its
        turns; any thread); how many were running."""
        self.shutdown()
        with self._changed:
            self._stopped = True
            stops = list(self._calls.values())
        for stop in stops:
            stop()
        return len(stops)

    def wait_calls(self, timeout: float = STOP_WAIT_SECONDS) -> int:
        """Wait up to ``timeout`` seconds for the calls in the pool's threads to end, telling them to stop again
        every ``STOP_AGAIN_SECONDS`` (blocking: from a thread); how many are still running."""
        deadline = time.monotonic() + timeout
        while (left := self.stop_calls()) and (wait := deadline - time.monotonic()) > 0:
            with self._changed:
                self._changed.wait(min(wait, STOP_AGAIN_SECONDS))
        return self.running if left else 0
