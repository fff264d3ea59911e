"""When a streamed answer's text so far is handed on (to ``on_delta``).

Each hand-on joins the answer so far into one text, and every reader after it copies it again (the visible part,
the streaming guard's answer, the chat's live text). Handed on at every delta, those copies cost the answer's
length squared: 0.9 s of a turn's 1.3 s of CPU for 300,000 characters in 5-character deltas. A short answer is
still handed on at every delta; past that, when it grew by an eighth since the last hand-on (those copies add up
to eight times its length) or when a moment passed (so the chat shows new text no later than that).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from messaging_llm_bot.llm.usage import VisibleStream

#: An answer this short is handed on at every delta: its copies cost little (at most this length squared, halved,
#: divided by the delta's length: 8M characters for 1-character deltas).
ALWAYS_CHARS = 4_096
#: Past that, it is handed on when it grew by at least 1/GROWTH since the last hand-on.
GROWTH = 8
#: ... or when this long passed since the last (the chat's live text lags by no more) ...
SECONDS = 0.05
#: ... stretched for a longer text so that these hand-ons copy at most this many characters a second (a flooding
#: server's 32 MB answer: one every 1.6 s).
CHARS_PER_SECOND = 20_000_000


class HandOnPace:
    """Tells, at each delta, whether the answer so far is handed on now; ``handed``: its length when last handed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.handed = 0
        self._at = float("-inf")

    def due(self, length: int) -> bool:
        """True when the answer, ``length`` characters so far, is handed on now (it is then counted as handed)."""
        if length <= self.handed:
            return False
        grown = length <= ALWAYS_CHARS or (length - self.handed) * GROWTH >= length
        now = self._clock()
        if not grown and now - self._at < max(SECONDS, length / CHARS_PER_SECOND):
            return False
        self.handed, self._at = length, now
        return True


class PacedDeltas:
    """A streamed answer's visible text so far (``VisibleStream``) handed to ``on_delta`` at the pace's moments,
    and once more at the end when deltas were held back; ``text_so_far`` joins the answer so far."""

    def __init__(self, on_delta: Callable[[str], None], text_so_far: Callable[[], str]) -> None:
        self._on_delta, self._text_so_far = on_delta, text_so_far
        self._pace = HandOnPace()
        self._visible = VisibleStream()
        self._shown = ""

    def grew(self, length: int) -> None:
        """A delta came: the answer is ``length`` characters so far."""
        if self._pace.due(length):
            self._hand_on()

    def ended(self, length: int) -> None:
        """The answer is whole: what the pace held back is handed on."""
        if length > self._pace.handed:
            self._hand_on()

    def _hand_on(self) -> None:
        visible = self._visible.feed(self._text_so_far())
        if visible and visible != self._shown:
            self._shown = visible
            self._on_delta(visible)
