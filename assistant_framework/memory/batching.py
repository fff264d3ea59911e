"""When background model calls run: after the chat has been idle, batched, with backoff on failure.

A local server with one cached prompt (llama.cpp with one slot) loses the chat's prefix to any
other request; a fact extraction between two user turns makes the next turn be evaluated from
scratch. So exchanges wait here until no turn has been running for ``idle_seconds``, then go
to the worker as one batch per conversation. A failing batch logs one line, stays queued and
is retried after a growing pause.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class Exchange:
    """One user message and the reply to it, waiting for fact extraction."""

    conversation_id: str
    user_text: str
    reply: str
    turn_ids: list[str] = field(default_factory=list)
    untrusted: bool = False  # outside content entered the turn: its facts are stored marked
    journal_id: str = ""  # its entry in the on-disk queue (journal.py), removed once its facts are stored


class IdleBatcher:
    """Collects exchanges and submits ``run_batch(conversation_id, exchanges)`` jobs when idle."""

    def __init__(
        self,
        run_batch: Callable[[str, list[Exchange]], object],
        submit: Callable[[Callable[[], None], str], None],
        *,
        idle_seconds: float = 20.0,
        max_pending: int = 50,
        backoff_seconds: float = 30.0,
        max_backoff_seconds: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
        what: str = "fact extraction",
    ) -> None:
        self._run_batch = run_batch
        self._submit = submit
        self.idle_seconds = max(0.0, idle_seconds)
        self.max_pending = max(1, max_pending)
        self.backoff_seconds = backoff_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self._clock = clock
        self.what = what  # the work's name in log lines and job labels ("history compaction")
        self._lock = threading.Lock()
        self._pending: list[Exchange] = []
        self._active = 0
        self._last_activity = clock()
        self._failures = 0
        self._retry_at = 0.0
        self._timer: threading.Timer | None = None
        self._closed = False

    # -- what the chat reports -------------------------------------------------

    def turn_started(self) -> None:
        with self._lock:
            self._active += 1
            self._last_activity = self._clock()

    def turn_finished(self) -> None:
        with self._lock:
            self._active = max(0, self._active - 1)
            self._last_activity = self._clock()
        self._check()

    def add(self, exchange: Exchange) -> None:
        """Queue one exchange; it runs once the chat is idle (at once with ``idle_seconds`` 0)."""
        with self._lock:
            self._pending.append(exchange)
            if len(self._pending) > self.max_pending:
                dropped = len(self._pending) - self.max_pending
                del self._pending[:dropped]
                log.warning("%s: %d old exchange(s) dropped; the model server keeps failing", self.what, dropped)
            self._last_activity = self._clock() if self.idle_seconds else self._last_activity
        self._check()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    # -- scheduling --------------------------------------------------------------

    def _wait_left(self) -> float:
        """Seconds until a batch may run (lock held); 0 when it may run now."""
        now = self._clock()
        if self._active and self.idle_seconds:
            return self.idle_seconds
        return max(0.0, self._last_activity + self.idle_seconds - now, self._retry_at - now)

    def _check(self) -> None:
        with self._lock:
            if self._closed or not self._pending:
                return
            wait = self._wait_left()
            if wait <= 0:
                self._take_and_submit()
                return
            if self._timer is None:
                self._timer = threading.Timer(wait, self._fire)
                self._timer.daemon = True
                self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            self._timer = None
        self._check()

    def _take_and_submit(self) -> None:
        """Hand every pending exchange to the worker, one job per conversation (lock held)."""
        batches: dict[str, list[Exchange]] = {}
        for exchange in self._pending:
            batches.setdefault(exchange.conversation_id, []).append(exchange)
        self._pending = []
        for conversation_id, exchanges in batches.items():
            self._submit(functools.partial(self._run, conversation_id, exchanges), f"{self.what} for {conversation_id}")

    def _run(self, conversation_id: str, exchanges: list[Exchange]) -> None:
        try:
            self._run_batch(conversation_id, exchanges)
        except Exception as exc:  # the model server is down or refuses: keep the turns, retry later
            with self._lock:
                self._failures += 1
                pause = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (self._failures - 1))
                self._retry_at = self._clock() + pause
                self._pending[:0] = exchanges
            log.warning(
                "%s for %s failed (%s); %d exchange(s) kept, next try in %.0f s",
                self.what,
                conversation_id,
                _short(exc),
                len(exchanges),
                pause,
            )
            log.debug("%s failure", self.what, exc_info=True)
            self._check()
            return
        with self._lock:
            self._failures, self._retry_at = 0, 0.0

    def flush(self) -> None:
        """Submit everything pending now (shutdown, tests), whatever the idle time or backoff."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._retry_at = 0.0
            if self._pending:
                self._take_and_submit()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__
