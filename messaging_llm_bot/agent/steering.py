"""Messages added to the running turn ("steer", issue 45): a message the same person sends in the same
conversation while a turn runs enters that turn at its next round boundary, as a new user message.

Each running turn has one ``SteerBox``. A channel offers a message (``Agent.steer``); the rounds take what is
waiting between two model calls or after the skill calls of a round, never inside one (agent/rounds.py). When a
round's answer is the reply and nothing waits, the box closes in the same step, so a message offered later is
refused and the channel answers it in its own turn: no message is left in a closed box. ``interrupt`` also
hangs up the model call in flight, and the turn goes on at once with the new message.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass
class Steered:
    """One message offered to a running turn; ``taken`` once the turn's next request carries it."""

    text: str
    message_id: int | str | None = None
    taken: bool = False
    round: int | None = None  # the round whose request first carried it (the trace says where it entered)


@dataclass
class SteerBox:
    """The messages waiting to enter one running turn (thread-safe)."""

    user_id: int | str | None  # only this sender's messages enter; None (a job run): none do
    _waiting: list[Steered] = field(default_factory=list)
    _taken: list[Steered] = field(default_factory=list)
    _closed: bool = False
    _interrupted: bool = False
    _hooks: list[Callable[[], None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def offer(
        self, text: str, user_id: int | str | None, message_id: int | str | None, interrupt: bool
    ) -> Steered | None:
        """Add a message from ``user_id``; None when it cannot enter (another sender, a job, the turn is done)."""
        with self._lock:
            if self._closed or self.user_id is None or str(user_id) != str(self.user_id):
                return None
            steered = Steered(text, message_id)
            self._waiting.append(steered)
            hooks = list(self._hooks) if interrupt else []
            self._interrupted = self._interrupted or interrupt
        for hook in hooks:
            hook()  # hangs up the model call in flight
        return steered

    def take(self, round_no: int, *, close_if_empty: bool = False) -> list[Steered]:
        """What waits (marked taken in ``round_no``); with ``close_if_empty``, nothing more is accepted when
        nothing waits (the turn ends with the reply it has)."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
            for steered in waiting:
                steered.taken, steered.round = True, round_no
            self._taken.extend(waiting)
            if close_if_empty and not waiting:
                self._closed = True
            return waiting

    def interrupted(self) -> bool:
        """True once (then cleared) when an ``interrupt`` message cut the call in flight."""
        with self._lock:
            was, self._interrupted = self._interrupted, False
            return was

    def taken(self) -> list[Steered]:
        """The messages that entered the turn so far, in order."""
        with self._lock:
            return list(self._taken)

    def close(self) -> list[Steered]:
        """End of the turn: nothing more enters; the messages taken, in order."""
        with self._lock:
            self._closed = True
            return list(self._taken)

    @contextlib.contextmanager
    def on_interrupt(self, hook: Callable[[], None]) -> Iterator[None]:
        """Run ``hook`` when an ``interrupt`` message arrives while the block runs."""
        with self._lock:
            self._hooks.append(hook)
        try:
            yield
        finally:
            with self._lock:
                self._hooks.remove(hook)
