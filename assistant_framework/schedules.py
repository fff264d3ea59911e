"""Pure schedule arithmetic for collectors: next fire time, backoff, time parsing.

Cron expressions are evaluated by APScheduler's CronTrigger in the configured
IANA timezone, so "0 7 * * *" stays at 07:00 local time across DST changes.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import TYPE_CHECKING, overload
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

if TYPE_CHECKING:
    from apscheduler.triggers.cron import CronTrigger


DEFAULT_RETRY_BASE_SECONDS = 60.0
DEFAULT_MAX_BACKOFF_SECONDS = 3600.0


def zone(name: str) -> ZoneInfo:
    """The ZoneInfo for an IANA name; ValueError naming it when unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown timezone {name!r} (runtime.timezone): {exc}") from None


@lru_cache(maxsize=128)
def _cron_trigger(expr: str, tz_name: str) -> "CronTrigger":
    # Imported on first use: start-up does not need the cron parser (about 0.1 s of imports).
    from apscheduler.triggers.cron import CronTrigger

    try:
        return CronTrigger.from_crontab(expr, timezone=zone(tz_name))
    except ValueError as exc:
        raise ValueError(f"invalid cron expression {expr!r}: {exc}") from None


def validate_cron(expr: str) -> None:
    """Raise ValueError naming the expression when it is not a five-field cron."""
    _cron_trigger(expr, "UTC")


def next_cron_time(expr: str, after: datetime, tz_name: str = "UTC") -> datetime:
    """The first fire time of ``expr`` strictly after ``after`` (returned in UTC)."""
    trigger = _cron_trigger(expr, tz_name)
    after = as_utc(after)
    fire = trigger.get_next_fire_time(None, after)
    if fire is not None and fire <= after:
        fire = trigger.get_next_fire_time(None, after + timedelta(seconds=1))
    if fire is None:
        raise ValueError(f"cron expression {expr!r} never fires again after {after.isoformat()}")
    return fire.astimezone(timezone.utc)


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
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


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
    except (TypeError, ValueError):
        return None
