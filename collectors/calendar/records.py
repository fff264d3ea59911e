"""The calendar collector's records: JSON on disk (``events.json``, ``sources/<name>.json``) and its items."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class CalendarSource(TypedDict, total=False):
    """One configured source (``sources``: a URL or path, or ``{"url"|"path", "name"}``), its name made unique."""

    url: str
    path: str
    name: str


class CalendarEvent(TypedDict):
    """One occurrence in the window: an entry of ``events.json``, in the owner's time zone."""

    uid: str
    summary: str
    start: str  # ISO date (all day) or date-time
    end: str
    location: str
    all_day: bool
    calendar: NotRequired[str]  # the source's name


class EventChange(CalendarEvent):
    """An item of a run: an occurrence new, changed, moved or cancelled since the last run."""

    title: str
    change: str  # "new" | "changed" | "moved" | "cancelled"
    was: NotRequired[str]  # moved: the start it had
