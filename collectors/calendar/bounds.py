"""Bounds on expanding a calendar: an event repeating every second must cost neither minutes nor gigabytes.

recurring-ical-events (through dateutil) computes a rule's repetitions from the event's DTSTART,
keeps every one it computed, and makes a full copy of the event for each occurrence: one event
repeating every second took 7 s and 300 MB for a one-day window, and 1.8 GB once it had started
months before. So:

- Before expansion each event is priced (``rule_steps``): the repetitions its rules need from
  DTSTART to the window's end, estimated from FREQ, INTERVAL and the BY* parts (COUNT and UNTIL
  applied, RDATEs counted). An event over ``MAX_RULE_STEPS``, or one that would take the run past
  ``MAX_RUN_STEPS``, is not expanded at all: it is skipped like a broken event, with a warning
  naming it.
- While expanding (lazily, one occurrence at a time), at most ``MAX_OCCURRENCES_PER_EVENT`` of one
  event and ``MAX_OCCURRENCES_PER_RUN`` of the whole run (all sources together, a ``RunBudget``)
  are listed; what is left out is named in a warning.
"""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime
from typing import Any

import icalendar

#: Repetitions a rule may need computed (from its DTSTART to the window's end) to be expanded
#: (about a second of work).
MAX_RULE_STEPS = 100_000
#: Repetitions computed in one run, all events of all sources together.
MAX_RUN_STEPS = 1_000_000
#: Occurrences of one event listed in the window (a daily event over the longest window is 366).
MAX_OCCURRENCES_PER_EVENT = 1_000
#: Occurrences listed in one run, all sources together.
MAX_OCCURRENCES_PER_RUN = 10_000

_HMS = ("BYHOUR", "BYMINUTE", "BYSECOND")


class RunBudget:
    """How many more occurrences this run may list, and repetitions compute (shared by the sources' threads)."""

    def __init__(self, total: int = MAX_OCCURRENCES_PER_RUN, steps: float = MAX_RUN_STEPS) -> None:
        self.total = total
        self.steps = steps
        self._left = total
        self._steps_left = steps
        self._lock = threading.Lock()

    def spend(self, steps: float) -> bool:
        """An event needing ``steps`` repetitions may be expanded (False once the run's steps are spent)."""
        with self._lock:
            if steps > self._steps_left:
                return False
            self._steps_left -= steps
            return True

    def take(self) -> bool:
        """One more occurrence may be listed (False once the run's budget is spent)."""
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True


def rule_steps(event: icalendar.cal.Component, end: datetime) -> float:
    """About how many repetitions the event's RRULEs and RDATEs need computed from DTSTART to ``end``
    (0 when the event is too broken to price: the expansion reports it)."""
    try:
        dtstart = event.get("DTSTART")
        begin = _naive_utc(dtstart.dt) if dtstart is not None and hasattr(dtstart, "dt") else None
        steps = float(_rdate_count(event))
        rules = event.get("RRULE")
        if begin is None or rules is None:
            return steps
        for rule in rules if isinstance(rules, list) else [rules]:
            steps += _one_rule(rule, begin, _naive_utc(end))
        return steps
    except (ValueError, TypeError, AttributeError, OverflowError):
        return 0.0


def repeats_per_day(rule: icalendar.vRecur) -> float:
    """An upper estimate of how often one RRULE repeats a day (a vRecur: upper-case keys, list values)."""
    freq = str(_first(rule, "FREQ") or "").upper()
    interval = max(1, _int(_first(rule, "INTERVAL"), 1))
    hours, minutes, seconds = (len(rule.get(key) or []) for key in _HMS)
    if freq == "SECONDLY":
        per_day = (hours or 24) * (minutes or 60) * (seconds or 60) / interval
    elif freq == "MINUTELY":
        per_day = (hours or 24) * (minutes or 60) / interval * (seconds or 1)
    elif freq == "HOURLY":
        per_day = (hours or 24) / interval * (minutes or 1) * (seconds or 1)
    else:
        per_day = _days_per_day(rule, freq, interval) * (hours or 1) * (minutes or 1) * (seconds or 1)
    return min(per_day, 86_400.0)


def describe(event: icalendar.cal.Component) -> str:
    """How a warning names an event: its title and UID."""
    summary = " ".join(str(event.get("SUMMARY", "")).split())[:60] or "(no title)"
    uid = str(event.get("UID", "")) or "(no UID)"
    return f"{summary!r} ({uid})"


def _one_rule(rule: icalendar.vRecur, begin: datetime, end: datetime) -> float:
    until = _first(rule, "UNTIL")
    if isinstance(until, (date, datetime)):
        end = min(end, _naive_utc(until))
    days = max(0.0, (end - begin).total_seconds() / 86_400)
    steps = repeats_per_day(rule) * days + 1
    count = _int(_first(rule, "COUNT"), 0)
    return min(steps, count) if count > 0 else steps


def _days_per_day(rule: icalendar.vRecur, freq: str, interval: int) -> float:
    """Days a day that a DAILY-or-coarser rule picks (at most 1)."""
    by_day = [str(d) for d in rule.get("BYDAY") or []]
    # A weekday without an ordinal ("MO") is every such day of the period; "-1SU" is one.
    day_count = sum(1 if any(c.isdigit() for c in d) else 5 for d in by_day)
    if freq == "DAILY":
        per_period, period_days = 1, 1
    elif freq == "WEEKLY":
        per_period, period_days = len(by_day) or 1, 7
    elif freq == "MONTHLY":
        per_period, period_days = len(rule.get("BYMONTHDAY") or []) or day_count or 1, 28
    else:  # YEARLY (and anything unknown, priced like it)
        months = len(rule.get("BYMONTH") or []) or 12
        if rule.get("BYYEARDAY"):
            per_period = len(rule["BYYEARDAY"])
        elif rule.get("BYWEEKNO"):
            per_period = len(rule["BYWEEKNO"]) * (len(by_day) or 7)
        elif rule.get("BYMONTHDAY") or by_day:
            per_period = months * (len(rule.get("BYMONTHDAY") or []) or day_count)
        else:
            per_period = len(rule.get("BYMONTH") or []) or 1
        period_days = 365
    return min(1.0, per_period / (period_days * interval))


def _rdate_count(event: icalendar.cal.Component) -> int:
    rdates = event.get("RDATE")
    if rdates is None:
        return 0
    total = 0
    for item in rdates if isinstance(rdates, list) else [rdates]:
        total += len(getattr(item, "dts", None) or [item])
    return total


def _naive_utc(value: object) -> datetime:
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    raise ValueError(f"not a date: {value!r}")


def _first(rule: icalendar.vRecur, key: str) -> Any:  # a vRecur value: an int, a text, a date
    value = rule.get(key)
    if isinstance(value, (list, tuple)):
        return value[0] if value else None
    return value


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
