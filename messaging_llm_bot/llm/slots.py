"""Model-call slots (``llm.max_concurrency``) where user turns go first.

Background work (fact extraction, episodes, profile) calls the same model as the user's turns.
Marked with ``background_calls()``, such a call waits while any user call waits for a slot, so
a burst of chats is answered before the memory worker's calls take slots.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

_BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("llm_background_call", default=False)


@contextlib.contextmanager
def background_calls() -> Iterator[None]:
    """Model calls made inside this block (same thread or context) yield to user calls."""
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


def in_background() -> bool:
    """True inside ``background_calls()``."""
    return _BACKGROUND.get()


class PrioritySlots:
    """A counting semaphore of ``size`` slots; background callers wait while a foreground caller waits."""

    def __init__(self, size: int) -> None:
        self.size = max(1, int(size))
        self._cond = threading.Condition()
        self._free = self.size
        self._foreground_waiting = 0

    def acquire(self, background: bool | None = None) -> None:
        """Take a slot, blocking; ``background`` defaults to ``in_background()``."""
        background = in_background() if background is None else background
        with self._cond:
            if background:
                while self._free <= 0 or self._foreground_waiting:
                    self._cond.wait()
            else:
                self._foreground_waiting += 1
                try:
                    while self._free <= 0:
                        self._cond.wait()
                finally:
                    self._foreground_waiting -= 1
                    if not self._foreground_waiting:
                        self._cond.notify_all()  # background waiters may go now
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
        """User calls waiting for a slot now."""
        with self._cond:
            return self._foreground_waiting

    def __enter__(self) -> "PrioritySlots":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
