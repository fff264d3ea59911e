"""Built-in skill: list, create, move and delete events in the owner's CalDAV calendar (``calendar`` config).

The owner's only: a guest turn is refused whatever ``policy.guest_skills`` says (it is the owner's
diary). Times are the owner's wall-clock times in ``runtime.timezone`` (DST included); events are
written with that zone's TZID, so other calendar apps show them right. What ``list`` shows is outside
content (invitations carry other people's words): a move or delete after it asks the owner.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import icalendar
from icalendar.cal import Component

from assistant_framework.skills.once import OnceCall
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import OUTSIDE_LABEL, context_now, context_zone, need
from assistant_framework.workspace import Workspace

from .ledger import done_before as _done_before
from .ledger import once
from .ledger import once_call as _once_call
from .server import event_by_uid, owner_calendar
from .times import local_moment, shown

if TYPE_CHECKING:  # caldav is imported when the skill first talks to the server
    from caldav import Calendar, CalendarObjectResource

DESCRIPTION = (
    "The owner's calendar: list upcoming events (with their uid), create one, move one to a new start, or "
    "delete one. start is local time YYYY-MM-DD HH:MM."
)
CAPABILITIES = ["read", "write", "delete"]
#: Offered to the model only when a CalDAV server is configured.
REQUIRES_CONFIG = "calendar.url"
TIMEOUT_SECONDS = 60
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["list", "create", "move", "delete"]},
        "title": {"type": "string", "maxLength": 200},
        "start": {"type": "string", "maxLength": 40},
        "minutes": {"type": "integer", "minimum": 1, "maximum": 10080},
        "uid": {"type": "string", "maxLength": 300},
    },
    "required": ["action"],
    "additionalProperties": False,
}

#: Events ``list`` shows at most (the nearest first).
MAX_LISTED = 50
DEFAULT_MINUTES = 60
OWNER_ONLY = "the calendar is the owner's: it works only in the owner's own chat"


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> str:
    if context is None or not context.private:
        raise ValueError(OWNER_ONLY)
    settings = context.settings.calendar
    zone = context_zone(context)
    action = args["action"]
    if action in ("create", "move"):
        need(args, action, *(("title", "start") if action == "create" else ("uid", "start")))
        start = local_moment(args["start"], zone)
    if action in ("move", "delete"):
        need(args, action, "uid")
    if action == "list":
        with owner_calendar(settings) as calendar:
            return _list(calendar, context, settings.days, args.get("title"))

    def change() -> str:
        with owner_calendar(settings) as calendar:
            if action == "create":
                return _create(calendar, args["title"], start, int(args.get("minutes") or DEFAULT_MINUTES), zone)
            return _change(calendar, args, start if action == "move" else None, zone)

    # A create, move or delete is made at most once, also when a restart runs the turn again (ledger.py).
    return once(workspace, context, args, change)


def done_before(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> bool:
    """This create, move or delete was made before for the turn's message (a replay after a crash): the server is
    not asked, so neither is the owner (ledger.py)."""
    if context is None or not context.private or args.get("action") not in ("create", "move", "delete"):
        return False
    return _done_before(workspace, context, args)


def once_call(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> OnceCall | None:
    """A create, move or delete as the ledger matches it (the gate keeps the owner's no there)."""
    if context is None or not context.private or args.get("action") not in ("create", "move", "delete"):
        return None
    return _once_call(workspace, context, args)


def _change(calendar: Calendar, args: SkillArgs, start: datetime | None, zone: ZoneInfo) -> str:
    """Move (to ``start``) or delete the event ``args["uid"]``; the sentence the model reads."""
    event = event_by_uid(calendar, args["uid"])
    component = _single(event, args["uid"])
    title = str(component.get("summary", ""))
    if start is None:
        event.delete()
        return f"deleted {title!r} (uid {args['uid']}), which was on {shown(component.decoded('dtstart'), zone)}"
    was = component.decoded("dtstart")
    minutes = args.get("minutes")
    length = timedelta(minutes=int(minutes)) if minutes else _length(component)
    _set_times(component, start, length)
    event.save()
    return f"moved {title!r} (uid {args['uid']}) from {shown(was, zone)} to {shown(start, zone)} ({zone.key})"


def _list(calendar: Calendar, context: SkillContext | None, days: int, title: str | None) -> str:
    zone = context_zone(context)
    today = context_now(context).replace(hour=0, minute=0, second=0, microsecond=0)
    found: list[CalendarObjectResource] = calendar.search(
        start=today, end=today + timedelta(days=days), event=True, expand=True
    )
    rows: list[tuple[str, str]] = []
    for event in found:
        component = event.icalendar_component
        summary = str(component.get("summary", ""))
        if title and title.casefold() not in summary.casefold():
            continue
        start = component.decoded("dtstart")
        repeats = " (repeats)" if component.get("recurrence-id") or component.get("rrule") else ""
        key = start.astimezone(zone).isoformat() if isinstance(start, datetime) else start.isoformat()
        rows.append(
            (key, f"- {shown(start, zone)}, {_minutes(component)} min: {summary}{repeats} (uid {component.get('uid')})")
        )
    rows.sort()
    if not rows:
        return f"no events in the next {days} days" + (f" matching {title!r}" if title else "")
    more = f"\n({len(rows) - MAX_LISTED} more not shown)" if len(rows) > MAX_LISTED else ""
    # Titles come from whoever sent an invitation: outside content.
    return f"{OUTSIDE_LABEL} events ({zone.key}):\n" + "\n".join(row for _, row in rows[:MAX_LISTED]) + more


def _create(calendar: Calendar, title: str, start: datetime, minutes: int, zone: ZoneInfo) -> str:
    uid = f"{uuid.uuid4()}@assistant"
    event = icalendar.Event()
    event.add("uid", uid)
    event.add("summary", title)
    event.add("dtstamp", datetime.now(start.tzinfo))
    _set_times(event, start, timedelta(minutes=minutes))
    document = icalendar.Calendar()
    document.add("prodid", "-//assistant-framework//calendar skill//EN")
    document.add("version", "2.0")
    document.add_component(event)
    document.add_missing_timezones()
    calendar.save_event(document.to_ical().decode("utf-8"))
    return f"created {title!r} on {shown(start, zone)}, {minutes} min ({zone.key}); uid {uid}"


def _single(event: CalendarObjectResource, uid: str) -> Component:
    """The event's one VEVENT; a recurring series is refused (moving its first start would move them all)."""
    components: list[Component] = list(event.icalendar_instance.walk("VEVENT"))
    if len(components) != 1 or components[0].get("rrule"):
        raise ValueError(f"event {uid!r} repeats: change a recurring series in your calendar app")
    component = components[0]
    if not isinstance(component.decoded("dtstart"), datetime):
        raise ValueError(f"event {uid!r} is an all-day event: change it in your calendar app")
    return component


def _length(component: Component) -> timedelta:
    start = component.decoded("dtstart")
    length: timedelta
    if component.get("dtend"):
        length = component.decoded("dtend") - start
        return length
    if component.get("duration"):
        length = component.decoded("duration")
        return length
    return timedelta(minutes=DEFAULT_MINUTES)


def _minutes(component: Component) -> int:
    start = component.decoded("dtstart")
    if not isinstance(start, datetime):
        return 24 * 60
    return int(_length(component).total_seconds() // 60)


def _set_times(component: Component, start: datetime, length: timedelta) -> None:
    for key in ("dtstart", "dtend", "duration"):
        component.pop(key, None)
    component.add("dtstart", start)
    component.add("dtend", start + length)
