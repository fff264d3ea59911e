"""What part of a long list one page shows: the lines or records of a file, the turns of a day, the entries of a
list (a memory folder's files, the facts, the chats, the jobs, the reminders); and the line above it (``Pager``).

A page showed everything: a 20 MB note of 300,000 lines made a 41 MB page that Chromium took 104 s to lay
out, and a feed's items or a day of a busy group grow by themselves. A page shows ``ROWS`` rows from
``from=`` on, each cut at ``ROW_CHARS`` characters, with links to the rows before and after; the JSON
twins still send everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import tornado.web

T = TypeVar("T")

#: The most rows (lines, records) one page shows.
ROWS = 2000
#: The most characters of one row shown; the rest is named by its count.
ROW_CHARS = 4000
#: A conversation day's turns a page shows, and characters of a turn (the web chat's bound on a message: a
#: mail's body can be longer).
TURNS = 200
TURN_CHARS = 16_000
#: The entries of a list a page shows (a folder's files, facts, chats, jobs, reminders): 20,000 notes made a
#: 2 MB page, 20,000 facts (each with its form) 9 MB.
ENTRIES = 200


@dataclass(frozen=True)
class Window(Generic[T]):
    """``rows`` are the list's rows from index ``first`` on; ``total`` is the list's length."""

    first: int
    rows: Sequence[T]
    total: int
    size: int = ROWS

    @property
    def whole(self) -> bool:
        return self.first == 0 and len(self.rows) == self.total

    @property
    def earlier(self) -> int | None:
        """``from=`` of the page before, None on the first."""
        return max(0, self.first - self.size) if self.first > 0 else None

    @property
    def later(self) -> int | None:
        """``from=`` of the page after, None on the last."""
        end = self.first + len(self.rows)
        return end if end < self.total else None


def window(rows: Sequence[T], start: int = 0, size: int = ROWS) -> Window[T]:
    """The page of ``rows`` that starts at index ``start`` (the last page when ``start`` is past the end)."""
    first = max(0, min(start, (max(len(rows), 1) - 1) // size * size))
    return Window(first, rows[first : first + size], len(rows), size)


def page_of(index: int, size: int = ROWS) -> int:
    """``from=`` of the page that holds the row at ``index`` (0 for the first page: the address needs none)."""
    return max(0, index) // size * size


def cut(text: object, chars: int = ROW_CHARS) -> tuple[str, int]:
    """A row's text as shown, and how many characters were left out."""
    whole = "" if text is None else str(text)
    return whole[:chars], max(0, len(whole) - chars)


class Pager(tornado.web.UIModule):
    """``{% module Pager(rows, "Lines", href) %}``: "Lines 1–2000 of 9000 · earlier · later" above a list that does
    not fit one page (nothing when it does); the links are ``href`` with ``param=`` the other page's first row."""

    def render(self, rows: Window[Any], noun: str, href: str, param: str = "from") -> bytes | str:
        if rows.whole:
            return ""
        joined = "&" if "?" in href else "?"
        return self.render_string(
            "pager.html", rows=rows, noun=noun, link=lambda first: f"{href}{joined}{param}={first}"
        )
