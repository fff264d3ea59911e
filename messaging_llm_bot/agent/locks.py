"""A re-entrant lock that admits waiting threads strictly in arrival order (FIFO).

``threading.RLock`` wakes waiters in no particular order, so two messages of one chat sent
close together could be answered out of order. Tickets fix the order.
"""

from __future__ import annotations

import threading


class ConversationLock:
    """Re-entrant, first-come-first-served lock for one conversation."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._next_ticket = 0
        self._serving = 0
        self._abandoned: set[int] = set()
        self._owner: int | None = None
        self._depth = 0

    def acquire(self) -> None:
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:
                self._depth += 1
                return
            ticket = self._next_ticket
            self._next_ticket += 1
            try:
                while self._serving != ticket or self._owner is not None:
                    self._cond.wait()
            except BaseException:
                # An interrupted waiter must not block everyone queued behind it.
                self._abandoned.add(ticket)
                self._skip_abandoned()
                self._cond.notify_all()
                raise
            self._owner = me
            self._depth = 1

    def release(self) -> None:
        with self._cond:
            if self._owner != threading.get_ident():
                raise RuntimeError("ConversationLock released by a thread that does not hold it")
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._serving += 1
                self._skip_abandoned()
                self._cond.notify_all()

    def _skip_abandoned(self) -> None:
        while self._owner is None and self._serving in self._abandoned:
            self._abandoned.discard(self._serving)
            self._serving += 1

    @property
    def pending(self) -> int:
        """Messages holding or waiting for the lock."""
        with self._cond:
            return self._next_ticket - self._serving - len(self._abandoned)

    def __enter__(self) -> "ConversationLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
