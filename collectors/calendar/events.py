"""Expanding iCalendar data into plain event records in one timezone (pure functions)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import icalendar
import recurring_ical_events


def parse_calendar(data: bytes, source: str) -> icalendar.Calendar:
    """Parse ICS bytes; ValueError naming the source when they are not a calendar."""
    try:
        return icalendar.Calendar.from_ical(data)
    except ValueError as exc:
        raise ValueError(f"calendar {source}: not valid iCalendar data: {exc}") from None


def window(now: datetime, days: int) -> tuple[datetime, datetime]:
    """From local midnight today for ``days`` days (so today's earlier events still show)."""
    start = datetime.combine(now.date(), time(0), tzinfo=now.tzinfo)
    return start, start + timedelta(days=days)


def expand(cal: icalendar.Calendar, start: datetime, end: datetime, tz: ZoneInfo, calendar_name: str) -> list[dict]:
    """Occurrences (RRULE, EXDATE, RECURRENCE-ID applied) overlapping the window, as records."""
    records = []
    for event in recurring_ical_events.of(cal).between(start, end):
        record = event_record(event, tz)
        if record is not None:
            record["calendar"] = calendar_name
            records.append(record)
    return records


def event_record(event, tz: ZoneInfo) -> dict | None:
    dtstart = event.get("DTSTART")
    if dtstart is None:
        return None
    begin = dtstart.dt
    dtend = event.get("DTEND")
    if dtend is not None:
        finish = dtend.dt
    elif event.get("DURATION") is not None:
        finish = begin + event.get("DURATION").dt
    else:
        finish = begin + timedelta(days=1) if not isinstance(begin, datetime) else begin
    all_day = not isinstance(begin, datetime)
    return {
        "uid": str(event.get("UID", "")),
        "summary": " ".join(str(event.get("SUMMARY", "(no title)")).split()),
        "start": _iso(begin, tz),
        "end": _iso(finish, tz),
        "location": " ".join(str(event.get("LOCATION", "")).split()),
        "all_day": all_day,
    }


def _iso(value: date | datetime, tz: ZoneInfo) -> str:
    if isinstance(value, datetime):
        # Floating times (no TZID) mean the user's own local time.
        aware = value.replace(tzinfo=tz) if value.tzinfo is None else value.astimezone(tz)
        return aware.isoformat()
    return value.isoformat()


def sort_key(record: dict) -> tuple:
    # All-day events sort first on their day; timed ones by their local start.
    return (record["start"][:10], 0 if record["all_day"] else 1, record["start"], record["summary"])


def changes(previous: list[dict], current: list[dict]) -> list[dict]:
    """Occurrences that are new or changed since the last run, as notify-ready items."""
    before = {(e.get("uid"), e.get("start")): e for e in previous if isinstance(e, dict)}
    out = []
    for event in current:
        old = before.get((event["uid"], event["start"]))
        if old is None:
            kind = "new"
        elif any(old.get(k) != event.get(k) for k in ("summary", "end", "location", "all_day")):
            kind = "changed"
        else:
            continue
        out.append({**event, "title": event["summary"], "change": kind})
    return out
