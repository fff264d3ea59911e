"""What part of a long list one page shows: the lines or records of a file, the turns of a day.

A page showed everything: a 20 MB note of 300,000 lines made a 41 MB page that Chromium took 104 s to lay
out, and a feed's items or a day of a busy group grow by themselves. A page shows ``ROWS`` rows from
``from=`` on, each cut at ``ROW_CHARS`` characters, with links to the rows before and after; the JSON
twins still send everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

#: The most rows (lines, records, turns) one page shows.
ROWS = 2000
#: The most characters of one row shown; the rest is named by its count.
ROW_CHARS = 4000


@dataclass(frozen=True)
class Window(Generic[T]):
    """``rows`` are the list's rows from index ``first`` on; ``total`` is the list's length."""

    first: int
    rows: Sequence[T]
    total: int

    @property
    def whole(self) -> bool:
        return self.first == 0 and len(self.rows) == self.total

    @property
    def earlier(self) -> int | None:
        """``from=`` of the page before, None on the first."""
        return max(0, self.first - ROWS) if self.first > 0 else None

    @property
    def later(self) -> int | None:
        """``from=`` of the page after, None on the last."""
        end = self.first + len(self.rows)
        return end if end < self.total else None


def window(rows: Sequence[T], start: int = 0) -> Window[T]:
    """The page of ``rows`` that starts at index ``start`` (the last page when ``start`` is past the end)."""
    first = max(0, min(start, (max(len(rows), 1) - 1) // ROWS * ROWS))
    return Window(first, rows[first : first + ROWS], len(rows))


def page_of(index: int) -> int:
    """``from=`` of the page that holds the row at ``index`` (0 for the first page: the address needs none)."""
    return max(0, index) // ROWS * ROWS


def cut(text: object) -> tuple[str, int]:
    """A row's text as shown, and how many characters were left out."""
    whole = "" if text is None else str(text)
    return whole[:ROW_CHARS], max(0, len(whole) - ROW_CHARS)
