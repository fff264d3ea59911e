"""upcoming.md: the window's events grouped by local day."""

from __future__ import annotations

from datetime import date, datetime


def upcoming_markdown(events: list[dict], start: datetime, days: int, tz_name: str) -> str:
    lines = [f"# Upcoming events: {days} days from {start.date().isoformat()} ({tz_name})", ""]
    if not events:
        lines.append("No events.")
    current_day = None
    for event in events:
        day = event["start"][:10]
        if day != current_day:
            if current_day is not None:
                lines.append("")
            lines.append(f"## {date.fromisoformat(day).strftime('%a')} {day}")
            current_day = day
        when = "all day" if event["all_day"] else f"{_hm(event['start'])}–{_hm(event['end'])}"
        extra = f" ({event['location']})" if event.get("location") else ""
        cal = f" [{event['calendar']}]" if event.get("calendar") else ""
        lines.append(f"- {when} {event['summary']}{extra}{cal}")
    return "\n".join(lines) + "\n"


def _hm(iso: str) -> str:
    return datetime.fromisoformat(iso).strftime("%H:%M")
