"""Expanding iCalendar data into plain event records in one timezone (pure functions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any, cast
from zoneinfo import ZoneInfo

import icalendar
import recurring_ical_events

from assistant_framework.json_types import JsonObject

from .bounds import (
    MAX_OCCURRENCES_PER_EVENT,
    MAX_RULE_STEPS,
    RunBudget,
    describe,
    repeats_per_day,
    rule_steps,
)
from .records import CalendarEvent, EventChange

MAX_REASON_CHARS = 200


@dataclass
class Skipped:
    """One event that could not be expanded: its UID and why (the rest of its calendar is kept)."""

    uid: str
    reason: str


def parse_calendar(data: bytes, source: str) -> icalendar.Calendar:
    """Parse ICS bytes (several VCALENDARs or a bare VEVENT too); ValueError naming the source otherwise."""
    try:
        parts = icalendar.Calendar.from_ical(data, multiple=True)
    except Exception as exc:  # noqa: BLE001 - the parser raises more than ValueError on broken input
        raise ValueError(f"calendar {source}: not valid iCalendar data: {reason_text(exc)}") from None
    if len(parts) == 1 and parts[0].name == "VCALENDAR":
        return parts[0]
    merged = icalendar.Calendar()
    for part in parts:
        for component in part.subcomponents if part.name == "VCALENDAR" else [part]:
            merged.add_component(component)
    if not merged.subcomponents:
        raise ValueError(f"calendar {source}: not valid iCalendar data: no calendar components")
    return merged


def window(now: datetime, days: int) -> tuple[datetime, datetime]:
    """From local midnight today for ``days`` days (so today's earlier events still show)."""
    start = datetime.combine(now.date(), time(0), tzinfo=now.tzinfo)
    return start, start + timedelta(days=days)


@dataclass
class Expansion:
    """One calendar's occurrences in the window, the events skipped, and the events cut short."""

    records: list[CalendarEvent] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # broken, or repeating too often to expand
    cut: list[str] = field(default_factory=list)  # warnings: events whose occurrences were not all listed
    cut_uids: set[str] = field(default_factory=set)  # their UIDs (left out of the change report)


def expand(
    cal: icalendar.Calendar,
    start: datetime,
    end: datetime,
    tz: ZoneInfo,
    calendar_name: str,
    budget: RunBudget | None = None,
) -> Expansion:
    """Occurrences (RRULE, EXDATE, RECURRENCE-ID applied) overlapping the window, within the bounds of
    ``bounds.py``: an event repeating too often is skipped, one event or the whole run (``budget``)
    lists at most so many occurrences.

    Each event is expanded on its own, lazily; when the calendar cannot even be read as a whole,
    each UID (with its moved occurrences and the calendar's time zones) is read on its own, so one
    broken event costs only itself.
    """
    budget = budget or RunBudget()
    cal, out = _without_dense_events(cal, end, budget)
    try:
        queries = [recurring_ical_events.of(cal)]
    except Exception:  # noqa: BLE001 - any error of one event must not cost the others
        queries = _queries_per_uid(cal, out)
    for query in queries:
        for series in query.series:
            _expand_series(series, start, end, tz, calendar_name, budget, out)
    return out


def _without_dense_events(
    cal: icalendar.Calendar, end: datetime, budget: RunBudget
) -> tuple[icalendar.Calendar, Expansion]:
    """The calendar without the events whose rules need too many repetitions computed (MAX_RULE_STEPS
    for one event, the run's remaining steps for all)."""
    out = Expansion()
    priced: dict[str, float] = {}
    for event in cal.walk("VEVENT"):  # an event's moved occurrences share its UID: priced together
        priced[_uid(event)] = priced.get(_uid(event), 0.0) + rule_steps(event, end)
    dense: set[str] = set()
    for event in cal.walk("VEVENT"):
        uid = _uid(event)
        if uid in dense or (not event.get("RRULE") and not event.get("RDATE")):
            continue
        steps, priced[uid] = priced.get(uid, 0.0), 0.0  # spent once per UID
        if steps > MAX_RULE_STEPS:
            why = f"{steps:,.0f} repetitions from its start: not expanded (over {MAX_RULE_STEPS:,})"
        elif not budget.spend(steps):
            why = f"{steps:,.0f} repetitions: not expanded, the run's {budget.steps:,.0f} are spent"
        else:
            continue
        dense.add(uid)
        per_day = max((repeats_per_day(r) for r in _rules(event)), default=0)
        out.skipped.append(
            Skipped(uid=uid, reason=f"{describe(event)} repeats about {per_day:,.0f} times a day, {why}")
        )
    if not dense:
        return cal, out
    kept = icalendar.Calendar()
    kept.update(cal)  # the calendar's properties as they are (X-WR-TIMEZONE among them)
    for component in cal.subcomponents:
        if not (component.name == "VEVENT" and _uid(component) in dense):
            kept.add_component(component)
    return kept, out


def _rules(event: icalendar.cal.Component) -> list[icalendar.vRecur]:
    rules = event.get("RRULE")
    return [] if rules is None else rules if isinstance(rules, list) else [rules]


def _queries_per_uid(cal: icalendar.Calendar, out: Expansion) -> list[Any]:
    timezones = [c for c in cal.subcomponents if c.name == "VTIMEZONE"]
    groups: dict[str, list[Any]] = {}
    for index, event in enumerate(cal.walk("VEVENT")):
        groups.setdefault(_uid(event) or f"#{index}", []).append(event)
    queries = []
    for key, events in groups.items():
        one = icalendar.Calendar()
        for component in [*timezones, *events]:
            one.add_component(component)
        try:
            queries.append(recurring_ical_events.of(one))
        except Exception as exc:  # noqa: BLE001
            out.skipped.append(Skipped(uid="" if key.startswith("#") else key, reason=reason_text(exc)))
    return queries


def _expand_series(
    series: Any,  # a recurring_ical_events series (the library has no types)
    start: datetime,
    end: datetime,
    tz: ZoneInfo,
    calendar_name: str,
    budget: RunBudget,
    out: Expansion,
) -> None:
    """One event's occurrences, taken one at a time up to the event's and the run's bounds."""
    taken: list[Any] = []
    limit = None
    try:
        for occurrence in series.between(start, end):
            if len(taken) >= MAX_OCCURRENCES_PER_EVENT:
                limit = f"only its first {MAX_OCCURRENCES_PER_EVENT:,} occurrences in the window are listed"
                break
            if not budget.take():
                limit = f"the run's limit of {budget.total:,} occurrences was reached ({len(taken)} of it listed)"
                break
            taken.append(occurrence)
        components = [occurrence.as_component(False) for occurrence in taken]
    except Exception as exc:  # noqa: BLE001 - any error of one event must not cost the others
        out.skipped.append(Skipped(uid=str(getattr(series, "uid", "") or ""), reason=reason_text(exc)))
        return
    got, bad = _records(components, tz, calendar_name)
    out.records.extend(got)
    out.skipped.extend(bad)
    if limit is not None:
        uid = str(getattr(series, "uid", "") or "")
        name = describe(components[0]) if components else repr(uid or "(no UID)")
        out.cut.append(f"event {name} has more occurrences than listed: {limit}")
        out.cut_uids.add(uid)


def _records(
    occurrences: list[icalendar.Event], tz: ZoneInfo, calendar_name: str
) -> tuple[list[CalendarEvent], list[Skipped]]:
    records: list[CalendarEvent] = []
    skipped: dict[str, Skipped] = {}
    for event in occurrences:
        try:
            record = event_record(event, tz)
        except Exception as exc:  # noqa: BLE001
            uid = _uid(event)
            skipped.setdefault(uid, Skipped(uid=uid, reason=reason_text(exc)))
            continue
        if record is not None:
            record["calendar"] = calendar_name
            records.append(record)
    return records, list(skipped.values())


def _uid(event: icalendar.cal.Component) -> str:
    value = event.get("UID", "")
    return str(value[0] if isinstance(value, list) and value else value or "")


def reason_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def event_record(event: icalendar.Event, tz: ZoneInfo) -> CalendarEvent | None:
    """One occurrence as a record (None when cancelled); raises on a broken DTSTART/DTEND (the caller skips the
    event)."""
    dtstart = event.get("DTSTART")
    if dtstart is None:
        return None
    if str(event.get("STATUS", "")).strip().upper() == "CANCELLED":
        # A cancelled meeting, or one cancelled occurrence of a series (Google, Outlook): not upcoming.
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


def sort_key(record: CalendarEvent) -> tuple[str, int, str, str]:
    # All-day events sort first on their day; timed ones by their local start.
    return (record["start"][:10], 0 if record["all_day"] else 1, record["start"], record["summary"])


def changes(
    previous: list[JsonObject],
    current: list[CalendarEvent],
    *,
    checked: set[str] | None = None,
    now: datetime | None = None,
    until: datetime | None = None,
) -> list[EventChange]:
    """Occurrences that are new, changed, moved or gone since the last run, as notify-ready items.

    Gone ones count only for the calendars in ``checked`` (read fine this run: a failed source keeps
    its last events) and only while still ahead (ending after ``now``, starting before ``until``, so
    the passing of time or a shorter window is not a cancellation). A gone occurrence whose UID is
    new at another time is ``moved``; otherwise ``cancelled`` (cancelled or deleted at the source).
    A new occurrence in the window's last day is not taken for a moved one: the window moving on
    brings the next one of a series into view, which is no move of the one cancelled meanwhile.
    """
    # events.json as the last run wrote it: CalendarEvent records.
    before = {(e.get("uid"), e.get("start")): cast(CalendarEvent, e) for e in previous if isinstance(e, dict)}
    now_keys = {(e["uid"], e["start"]) for e in current}
    gone = [
        e
        for key, e in before.items()
        if key not in now_keys and checked is not None and e.get("calendar") in checked and _ahead(e, now, until)
    ]
    gone_by_uid: dict[tuple[str | None, str], list[CalendarEvent]] = {}
    for event in gone:
        gone_by_uid.setdefault((event.get("calendar"), event.get("uid")), []).append(event)
    out: list[EventChange] = []
    for event in current:
        old = before.get((event["uid"], event["start"]))
        if old is None:
            was = None if _entering(event, until) else gone_by_uid.get((event.get("calendar"), event["uid"]))
            if was:
                moved_from = was.pop(0)
                out.append(
                    {**event, "title": f"moved: {event['summary']}", "change": "moved", "was": moved_from["start"]}
                )
                continue
            kind = "new"
        elif any(old.get(k) != event.get(k) for k in ("summary", "end", "location", "all_day")):
            kind = "changed"
        else:
            continue
        out.append(_change(event, event["summary"], kind))
    for left in gone_by_uid.values():
        out.extend(_change(event, f"cancelled: {event.get('summary', '')}", "cancelled") for event in left)
    return out


def _change(event: CalendarEvent, title: str, change: str) -> EventChange:
    """The item for one occurrence: its record, its title in the notice and what happened to it."""
    item = cast(EventChange, dict(event))
    item["title"], item["change"] = title, change
    return item


def _entering(event: CalendarEvent, until: datetime | None) -> bool:
    """Whether an occurrence starts in the last day before ``until`` (it may just have come into view)."""
    if until is None:
        return False
    try:
        return _as_datetime(str(event.get("start", "")), until.tzinfo) >= until - timedelta(days=1)
    except ValueError:
        return False


def _ahead(event: CalendarEvent, now: datetime | None, until: datetime | None) -> bool:
    """Whether an occurrence has not ended by ``now`` and starts before ``until`` (unparseable: no)."""
    anchor = now or until
    if anchor is None:
        return False
    try:
        start, end = (_as_datetime(str(event.get(k, "")), anchor.tzinfo) for k in ("start", "end"))
    except (ValueError, AttributeError):
        return False
    return (now is None or end > now) and (until is None or start < until)


def _as_datetime(text: str, tz: tzinfo | None) -> datetime:
    """An event time as an aware datetime; an all-day date is its local midnight."""
    value = datetime.fromisoformat(text)
    return value if value.tzinfo is not None else value.replace(tzinfo=tz)
