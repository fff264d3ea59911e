"""Model-call slots (``llm.max_concurrency``): the owner's turns first, then other chats, then background work.

Background work (fact extraction, episodes, profile) calls the same model as the turns. Marked with
``background_calls()``, such a call waits while any turn's call waits; a call of the owner's turn
(marked by the chat frontends with ``owner_calls()``) takes the next free slot ahead of other chats'
calls, so a friend's backlog or a busy group does not hold the owner's answer back.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

#: Priority levels, most urgent first.
OWNER, USER, BACKGROUND = 0, 1, 2
_LEVEL: contextvars.ContextVar[int] = contextvars.ContextVar("llm_call_level", default=USER)


@contextlib.contextmanager
def _level(level: int) -> Iterator[None]:
    token = _LEVEL.set(level)
    try:
        yield
    finally:
        _LEVEL.reset(token)


def background_calls() -> contextlib.AbstractContextManager[None]:
    """Model calls made inside this block (same thread or context) yield to every turn's calls."""
    return _level(BACKGROUND)


def owner_calls() -> contextlib.AbstractContextManager[None]:
    """Model calls made inside this block (the owner's turn) go before other chats' calls."""
    return _level(OWNER)


def in_background() -> bool:
    """True inside ``background_calls()``."""
    return _LEVEL.get() == BACKGROUND


class PrioritySlots:
    """A counting semaphore of ``size`` slots; a caller waits while a more urgent caller waits."""

    def __init__(self, size: int) -> None:
        self.size = max(1, int(size))
        self._cond = threading.Condition()
        self._free = self.size
        self._waiting = [0, 0, 0]  # per level

    def acquire(self, background: bool | None = None) -> None:
        """Take a slot, blocking. The level is the context's (``owner_calls``/``background_calls``);
        ``background`` True or False overrides it with background or an ordinary turn."""
        level = _LEVEL.get() if background is None else (BACKGROUND if background else USER)
        with self._cond:
            self._waiting[level] += 1
            try:
                while self._free <= 0 or any(self._waiting[:level]):
                    self._cond.wait()
            finally:
                self._waiting[level] -= 1
                self._cond.notify_all()  # less urgent waiters may go now
            self._free -= 1

    def release(self) -> None:
        """Give a slot back."""
        with self._cond:
            if self._free >= self.size:
                raise ValueError("PrioritySlots released too many times")
            self._free += 1
            self._cond.notify_all()

    @property
    def waiting_foreground(self) -> int:
        """Turn calls (the owner's and other chats') waiting for a slot now."""
        with self._cond:
            return self._waiting[OWNER] + self._waiting[USER]

    def __enter__(self) -> PrioritySlots:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
