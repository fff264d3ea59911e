"""The /now digest: today's tasks, birthdays, reminders, calendar and collector news, from files only.

No model call and no tokens: everything is read from the workspace stores and collector outputs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import date, datetime
from zoneinfo import ZoneInfo

from assistant_framework.collectors.days import covered_days, parse_moment
from assistant_framework.collectors.triage import triage_status
from assistant_framework.stores.people import BirthdayStore
from assistant_framework.stores.provenance import is_untrusted
from assistant_framework.stores.reminders import ReminderStore, due_at_of
from assistant_framework.stores.tasks import TaskStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.job_texts import jobs_today
from messaging_llm_bot.conversation.markup import escape_markdown
from messaging_llm_bot.conversation.reminders import FROM_OUTSIDE

log = logging.getLogger(__name__)

BIRTHDAY_DAYS = 7
#: Reminders the chat refused for good are listed while their time is at most this many days ago.
FAILED_REMINDER_DAYS = 7
CALENDAR_EVENTS = "collectors/calendar/events.json"
NEW_ITEMS_GLOB = "collectors/*/new.json"
#: How a collector's new items are named in the digest; unknown collectors show "new items".
_NEWS_NOUNS = {
    "mail": "new mails",
    "email": "new mails",
    "imap": "new mails",
    "rss": "new feed items",
    "feeds": "new feed items",
    "feed": "new feed items",
}


def build_digest(workspace: Workspace, now: datetime, timezone: str) -> str:
    """The digest text for ``now`` (aware) in ``timezone``; sections without content are left out."""
    tz = ZoneInfo(timezone)
    local_now = now.astimezone(tz)
    today = local_now.date()
    sections = [
        _tasks(workspace, today),
        _reminders(workspace, local_now),
        _failed_reminders(workspace, local_now),
        _jobs(workspace, local_now),
        _calendar(workspace, today, tz),
        _birthdays(workspace, today),
        _news(workspace),
        _not_sorted(workspace, today),
    ]
    body = [s for s in sections if s]
    head = f"📋 **Now** — {local_now.strftime('%a %d %b %Y, %H:%M')} ({timezone})"
    if not body:
        return head + "\n\nNothing due today: no open tasks, reminders, events or birthdays."
    return head + "\n\n" + "\n\n".join(body)


def _safe(section: Callable[..., str]) -> Callable[..., str]:
    """Decorator: a damaged file shows a one-line note instead of breaking the whole digest."""

    def wrapper(workspace: Workspace, *args: object) -> str:
        try:
            return section(workspace, *args)
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
            log.warning("digest: section %s failed: %s", section.__name__, err)
            return f"⚠️ {section.__name__.strip('_')}: could not be read ({err})"

    wrapper.__name__ = section.__name__
    return wrapper


def _md(value: object) -> str:
    """An item's text inside the digest's Markdown: shown as typed (a calendar invite or a mail
    subject must not turn into a hidden link or formatting)."""
    return escape_markdown(str(value))


def _outside(record: Mapping[str, object]) -> str:
    """A short flag for an item saved from outside content, so it never reads as the owner's own."""
    return f" {FROM_OUTSIDE}" if is_untrusted(record) else ""


@_safe
def _tasks(workspace: Workspace, today: date) -> str:
    tasks = TaskStore(workspace).due_or_overdue(today)
    if not tasks:
        return ""
    lines = ["✅ **Tasks**"]
    for task in tasks:
        due = str(task.get("due") or "")
        when = "today" if due[:10] == today.isoformat() else f"overdue since {due[:10]}"
        clock = f" {due[11:16]}" if len(due) > 10 else ""
        lines.append(f"- {_md(task.get('title', '(untitled)'))} ({when}{clock}){_outside(task)}")
    return "\n".join(lines)


@_safe
def _reminders(workspace: Workspace, local_now: datetime) -> str:
    tz = local_now.tzinfo
    rows = []
    for reminder in ReminderStore(workspace).pending():
        due = due_at_of(reminder)
        if due is None:
            continue
        local_due = due.astimezone(tz)
        if local_due.date() <= local_now.date():
            note = (" (missed)" if local_due < local_now else "") + _outside(reminder)
            rows.append(
                f"- {local_due.strftime('%H:%M')} {_md(reminder.get('text', ''))}{note}"
                if local_due.date() == local_now.date()
                else f"- {local_due.strftime('%Y-%m-%d %H:%M')} {_md(reminder.get('text', ''))}{note}"
            )
    return "\n".join(["⏰ **Reminders today**", *rows]) if rows else ""


@_safe
def _failed_reminders(workspace: Workspace, local_now: datetime) -> str:
    """Reminders the chat refused for good (blocked bot, chat not found), with the reason."""
    rows = []
    for reminder in ReminderStore(workspace).list(status="failed"):
        due = due_at_of(reminder)
        if due is None or (local_now - due).days >= FAILED_REMINDER_DAYS:
            continue
        when = due.astimezone(local_now.tzinfo).strftime("%Y-%m-%d %H:%M")
        rows.append(
            f"- {when} {_md(reminder.get('text', ''))} (chat {_md(reminder.get('chat_id'))}: "
            f"{_md(reminder.get('error') or 'refused')}){_outside(reminder)}"
        )
    return "\n".join(["⚠️ **Reminders not delivered**", *rows]) if rows else ""


@_safe
def _jobs(workspace: Workspace, local_now: datetime) -> str:
    return jobs_today(workspace, local_now)


@_safe
def _calendar(workspace: Workspace, today: date, tz: ZoneInfo) -> str:
    events = workspace.read_json(CALENDAR_EVENTS, default=None)
    if not isinstance(events, list):
        return ""
    todays = []
    for event in events:
        if not isinstance(event, dict):
            continue
        start = parse_moment(event.get("start"), tz)
        if start is None:
            continue
        end = parse_moment(event.get("end"), tz)
        all_day = bool(event.get("all_day")) or not isinstance(start, datetime)
        # An event belongs to every day its span overlaps; the end is exclusive (21:00-00:00 is one day).
        if today not in covered_days(start, end):
            continue
        if all_day:
            clock = "all day"
        elif isinstance(start, datetime) and start.date() == today:
            clock = start.strftime("%H:%M")
        elif isinstance(end, datetime) and end.date() == today:
            clock = f"until {end.strftime('%H:%M')}"
        else:
            clock = "all day"
        where = f" @ {_md(event['location'])}" if event.get("location") else ""
        todays.append((clock != "all day", clock, f"- {clock} {_md(event.get('summary') or '(no title)')}{where}"))
    if not todays:
        return ""
    return "\n".join(["📅 **Calendar today**", *[line for _, _, line in sorted(todays)]])


@_safe
def _birthdays(workspace: Workspace, today: date) -> str:
    found = BirthdayStore(workspace).upcoming(today, BIRTHDAY_DAYS)
    if not found:
        return ""
    lines = ["🎂 **Birthdays (next 7 days)**"]
    for when, row in found:
        days = (when - today).days
        label = "today" if days == 0 else "tomorrow" if days == 1 else f"{when.strftime('%a %d %b')} (in {days} days)"
        lines.append(f"- {_md(row.get('name', '?'))}: {label}{_outside(row)}")
    return "\n".join(lines)


@_safe
def _news(workspace: Workspace) -> str:
    lines = []
    for rel in workspace.list(NEW_ITEMS_GLOB):
        name = rel.split("/")[1]
        if name == "calendar":
            continue
        items = workspace.read_json(rel, default=None)
        count = (
            len(items) if isinstance(items, list) else len(items.get("items") or []) if isinstance(items, dict) else 0
        )
        if count:
            lines.append(f"- {_md(name)}: {count} {_NEWS_NOUNS.get(name, 'new items')}")
    return "\n".join(["📬 **New since the last check**", *lines]) if lines else ""


@_safe
def _not_sorted(workspace: Workspace, today: date) -> str:
    """Collectors whose ``ask`` rule left new items unasked today (its budget was spent)."""
    lines = []
    for name, counts in sorted(triage_status(workspace, today).items()):
        left = counts.get("not_asked")
        if isinstance(left, int) and left > 0:
            lines.append(
                f"- {_md(name)}: {left} new item(s) not sorted by the model today: the ask rule's budget is "
                f"spent for now ({counts.get('asked', 0)} of {counts.get('limit', '?')} asked; more as the day goes on)"
            )
    return "\n".join(["🔕 **Not sorted for you**", *lines]) if lines else ""
