"""upcoming.md: the window's events grouped by local day."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from assistant_framework.collectors.days import covered_days, parse_moment

from .records import CalendarEvent


def upcoming_markdown(events: list[CalendarEvent], start: datetime, days: int, tz_name: str) -> str:
    """Each event under every day its span overlaps (end exclusive), all-day ones first."""
    tz = ZoneInfo(tz_name)
    by_day: dict[date, list[str]] = {}
    first, last = start.date(), start.date().toordinal() + days - 1
    for event in events:
        begin = parse_moment(event["start"], tz)
        if begin is None:
            continue
        for day in covered_days(begin, parse_moment(event.get("end", ""), tz)):
            if first <= day and day.toordinal() <= last:
                by_day.setdefault(day, []).append(_line(event, day, tz))
    lines = [f"# Upcoming events: {days} days from {start.date().isoformat()} ({tz_name})", ""]
    if not by_day:
        lines.append("No events.")
    for n, day in enumerate(sorted(by_day)):
        if n:
            lines.append("")
        lines.append(f"## {day.strftime('%a')} {day.isoformat()}")
        lines.extend(by_day[day])
    return "\n".join(lines) + "\n"


def _line(event: CalendarEvent, day: date, tz: ZoneInfo) -> str:
    if event["all_day"]:
        when = "all day"
    else:
        begin = parse_moment(event["start"], tz)
        end = parse_moment(event.get("end", ""), tz) or begin
        # A time that does not read as a date-time (a bare date) spans the whole day.
        starts = begin.strftime("%H:%M") if isinstance(begin, datetime) and begin.date() == day else "00:00"
        ends = end.strftime("%H:%M") if isinstance(end, datetime) and end.date() == day else "24:00"
        when = "all day" if (starts, ends) == ("00:00", "24:00") else f"{starts}–{ends}"
    extra = f" ({event['location']})" if event.get("location") else ""
    cal = f" [{event['calendar']}]" if event.get("calendar") else ""
    return f"- {when} {event['summary']}{extra}{cal}"
