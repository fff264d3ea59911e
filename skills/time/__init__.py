"""Built-in skill: the current date and time, and simple date arithmetic."""

from __future__ import annotations

from datetime import date, timedelta
from typing import TypedDict

from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import context_now
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Current date and time, and date math: weekday of a date, days until a date, add days or weeks, the next weekday."
)
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["now", "add", "weekday", "days_until", "next"]},
        "date": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$", "examples": ["2026-12-01"]},
        "days": {"type": "integer"},
        "weeks": {"type": "integer"},
        "weekday": {"type": "string"},
    },
    "additionalProperties": False,
}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    now = context_now(context)
    today = now.date()
    action = args.get("action", "now")
    if action == "now":
        return {
            "now": now.strftime("%Y-%m-%d %H:%M"),
            "weekday": now.strftime("%A"),
            "timezone": str(now.tzinfo),
            "utc_offset": now.strftime("%z"),
        }
    base = _date(str(args["date"])) if args.get("date") else today
    if action == "add":
        try:
            result = base + timedelta(days=args.get("days", 0), weeks=args.get("weeks", 0))
        except OverflowError:
            raise ValueError(
                f"{args.get('days', 0)} days and {args.get('weeks', 0)} weeks from {base} is outside the calendar "
                "(years 1-9999)"
            ) from None
        return _describe(result, today)
    if action == "weekday":
        return _describe(base, today)
    if action == "days_until":
        if not args.get("date"):
            raise ValueError("action 'days_until' needs date")
        return _describe(base, today)
    return _describe(next_weekday(today, args.get("weekday", "")), today)


def next_weekday(today: date, name: str) -> date:
    """The first date after ``today`` falling on weekday ``name`` (1 to 7 days ahead)."""
    wanted = str(name).strip().lower().rstrip(".")
    # A name or a start of it of 2+ letters ("fri", "thurs", "tu"), never a word that only begins like one ("monkey").
    matches = [i for i, day in enumerate(WEEKDAYS) if len(wanted) >= 2 and day.startswith(wanted)]
    index = matches[0] if len(matches) == 1 else None
    if index is None:
        raise ValueError(f"weekday {name!r} is not one of {', '.join(WEEKDAYS)}")
    return today + timedelta(days=(index - today.weekday() - 1) % 7 + 1)


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"date {text!r} is not a real YYYY-MM-DD date") from None


class DayRow(TypedDict):
    """A date in the skill's answer, with its weekday and how far it is from today."""

    date: str
    weekday: str
    days_from_today: int


def _describe(day: date, today: date) -> DayRow:
    return {
        "date": day.isoformat(),
        "weekday": WEEKDAYS[day.weekday()].capitalize(),
        "days_from_today": (day - today).days,
    }
