"""Per conversation: a re-entrant lock that admits waiting threads strictly in arrival order (FIFO),
and the stop switch of the turn running now.

``threading.RLock`` wakes waiters in no particular order, so two messages of one chat sent
close together could be answered out of order. Tickets fix the order.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from messaging_llm_bot.llm.hangup import StopSwitch


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

    def __enter__(self) -> ConversationLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Conversations:
    """Per conversation: its FIFO lock, and the stop switch of the turn running in it now (thread-safe)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, ConversationLock] = {}
        self._running: dict[str, StopSwitch] = {}

    def lock(self, conversation_id: str) -> ConversationLock:
        """The conversation's lock (one per conversation for the life of the agent)."""
        with self._guard:
            return self._locks.setdefault(conversation_id, ConversationLock())

    def pending(self, conversation_id: str) -> int:
        """Messages of a conversation being answered or waiting their turn."""
        with self._guard:
            lock = self._locks.get(conversation_id)
        return lock.pending if lock else 0

    @contextlib.contextmanager
    def running(self, conversation_id: str, switch: StopSwitch) -> Iterator[None]:
        """While the block runs, ``stop(conversation_id)`` sets ``switch`` (call it under the conversation's lock)."""
        with self._guard:
            self._running[conversation_id] = switch
        try:
            yield
        finally:
            with self._guard:
                if self._running.get(conversation_id) is switch:
                    del self._running[conversation_id]

    def stop(self, conversation_id: str, why: str = "") -> bool:
        """Set the stop switch of the turn running in the conversation (``why``: for its trace, "" for the owner's
        stop); False when none runs (or it is set)."""
        with self._guard:
            switch = self._running.get(conversation_id)
        if switch is None or switch.is_set():
            return False
        switch.why = why
        switch.set()
        return True
