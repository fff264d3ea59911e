"""Pure schedule arithmetic for collectors and jobs: next fire time, backoff, time parsing.

Cron expressions are evaluated by croniter in the configured IANA timezone, so "0 7 * * *" stays at
07:00 local time across DST changes, and the weekday field means what cron means (0 or 7 Sunday,
``1-5`` Monday to Friday; APScheduler 3's ``CronTrigger.from_crontab`` read ``1-5`` as Tuesday to Saturday).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import overload
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DEFAULT_RETRY_BASE_SECONDS = 60.0
DEFAULT_MAX_BACKOFF_SECONDS = 3600.0


def zone(name: str) -> ZoneInfo:
    """The ZoneInfo for an IANA name; ValueError naming it when unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown timezone {name!r} (runtime.timezone): {exc}") from None


#: The five cron fields in order: name, lowest, highest, and the names allowed for their numbers.
CRON_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day", 1, 31, ()),
    ("month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
    ("weekday", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)


def validate_cron(expr: str) -> None:
    """Raise ValueError naming the expression and what is wrong (``hour 25 is out of 0-23``) when it is not a
    five-field cron."""
    # Imported on first use: start-up does not need the cron parser.
    from croniter import croniter

    fields = str(expr).split()
    if len(fields) != 5:
        raise ValueError(
            f"invalid cron expression {expr!r}: it has {len(fields)} field(s); five expected "
            "(minute hour day month weekday)"
        )
    if not croniter.is_valid(str(expr)):
        why = next((problem for problem in map(_cron_field_problem, CRON_FIELDS, fields) if problem), None)
        raise ValueError(
            f"invalid cron expression {expr!r}: {why or 'croniter cannot read it'} "
            "(fields: minute hour day month weekday)"
        )


def _cron_field_problem(spec: tuple[str, int, int, tuple[str, ...]], text: str) -> str | None:
    """What is wrong with one cron field (``hour 25 is out of 0-23``), or None when this check finds nothing
    (croniter's own forms, such as ``L`` or ``1#2``, are left to it)."""
    name, low, high, names = spec
    for part in text.split(","):
        body, _, step = part.partition("/")
        if step and (not step.isdigit() or int(step) == 0):
            return f"{name} step {step!r} must be a whole number from 1"
        if body in ("*", "?"):
            continue
        for value in body.split("-", 1):
            if value.isdigit():
                if not low <= int(value) <= high:
                    return f"{name} {int(value)} is out of {low}-{high}"
            elif value.lower() not in names and not any(mark in value.upper() for mark in ("L", "W", "#")):
                return f"{name} {value!r} is not a number from {low} to {high}" + (
                    f" or a name ({names[0]}, {names[1]}, ...)" if names else ""
                )
    return None


def next_cron_time(expr: str, after: datetime, tz_name: str = "UTC") -> datetime:
    """The first fire time of ``expr`` strictly after ``after`` (returned in UTC)."""
    from croniter import CroniterError, croniter

    validate_cron(expr)
    after = as_utc(after)
    try:
        fire = croniter(expr, after.astimezone(zone(tz_name))).get_next(datetime)
    except (CroniterError, ValueError) as exc:
        raise ValueError(f"cron expression {expr!r} never fires again after {after.isoformat()}: {exc}") from None
    fire = as_utc(fire)
    if fire <= after:  # croniter works in whole seconds: never hand back the moment asked about
        return next_cron_time(expr, after + timedelta(seconds=1), tz_name)
    return fire


def previous_cron_time(expr: str, before: datetime, tz_name: str = "UTC") -> datetime | None:
    """The last fire time of ``expr`` strictly before ``before`` (in UTC), or None when there is none."""
    from croniter import CroniterError, croniter

    try:
        fire = croniter(expr, as_utc(before).astimezone(zone(tz_name))).get_prev(datetime)
    except (CroniterError, ValueError, OverflowError):
        return None
    return as_utc(fire)


def next_regular_run(
    *,
    interval_seconds: float | None,
    cron: str | None,
    last_start: datetime | None,
    now: datetime,
    tz_name: str = "UTC",
) -> datetime:
    """When a collector should next run after a successful run (or at first sight)."""
    now = as_utc(now)
    if cron:
        return next_cron_time(cron, now, tz_name)
    if interval_seconds is None:
        raise ValueError("a collector needs interval_seconds or cron")
    if last_start is None:
        return now
    planned = as_utc(last_start) + timedelta(seconds=interval_seconds)
    # A run that took longer than its interval goes again now, not in the past.
    return max(planned, now)


def backoff_seconds(
    failures: int, base: float = DEFAULT_RETRY_BASE_SECONDS, cap: float = DEFAULT_MAX_BACKOFF_SECONDS
) -> float:
    """Retry delay after ``failures`` consecutive failures: base, 2*base, 4*base ... capped."""
    if failures <= 0:
        return 0.0
    # Bound the exponent so huge failure counts cannot overflow the float.
    return float(min(base * (2 ** min(failures - 1, 40)), cap))


def as_utc(moment: datetime) -> datetime:
    """An aware UTC datetime; naive values are taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


@overload
def to_iso(moment: datetime) -> str: ...
@overload
def to_iso(moment: None) -> None: ...
def to_iso(moment: datetime | None) -> str | None:
    return None if moment is None else as_utc(moment).isoformat(timespec="seconds")


def from_iso(text: str | None) -> datetime | None:
    """Parse a stored ISO timestamp; None for missing or unreadable values."""
    if not text:
        return None
    try:
        return as_utc(datetime.fromisoformat(text))
    except (TypeError, ValueError, OverflowError):  # OverflowError: a date at the calendar's end, moved to UTC
        return None
