"""Built-in skill: reminders the bot delivers later (stored, so they survive restarts)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from assistant_framework.json_types import JsonObject
from assistant_framework.skills.once import Action, made_before, made_once
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import MARKED, context_now, context_untrusted, context_zone, need, outside_label
from assistant_framework.stores import ReminderStore
from assistant_framework.stores.provenance import is_untrusted
from assistant_framework.stores.records import Reminder
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Alert the user later, at a time (at) or in N minutes: add ('remind me'), list, cancel. "
    "To-dos without an alert: tasks."
)
CAPABILITIES = ["read", "write"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["add", "list", "cancel"]},
        "text": {"type": "string"},
        "at": {
            "type": "string",
            "pattern": "^\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}$",
            "examples": ["2026-12-01 09:00"],
        },  # examples: in errors only, not in the prompt
        "in_minutes": {"type": "integer"},
        "id": {"type": "string"},
    },
    "required": ["action"],
    "additionalProperties": False,
}


#: A guest's turn runs on the chat's own area, where no scheduler looks: a reminder stored there would never come.
NOT_HERE = (
    "reminders are delivered in the owner's own chat only; one set here would never arrive. Tell the user so "
    "(a calendar or phone alarm can do it)."
)


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    if context is not None and not context.private:
        raise PermissionError(NOT_HERE)
    chat_id = context.chat_id if context is not None else None
    if chat_id is None:
        raise ValueError("reminders need a chat to deliver to; this conversation has no chat_id")
    store = ReminderStore(workspace)
    action = args["action"]
    if action == "list":
        return [_row(r) for r in store.list(chat_id, status="pending")] or "no pending reminders"
    if action == "cancel":
        need(args, action, "id")
        reminder = _own(store, chat_id, args["id"])
        if reminder.get("status") != "pending":
            raise ValueError(_not_pending(reminder))
        cancelled = store.cancel(reminder["id"])
        if cancelled.get("status") != "cancelled":  # delivered in the meantime
            raise ValueError(_not_pending(cancelled))
        return f"cancelled reminder {cancelled['id']}: {outside_label(cancelled)}{cancelled['text']}"
    need(args, action, "text")
    zone = context_zone(context)
    now = context_now(context)
    due = _due(args, now, zone)
    # In a turn with outside content the text may be that content's words: stored marked.
    untrusted = context_untrusted(context)
    # The conversation it was set in: a Telegram forum topic's reminder is delivered in that topic.
    conversation = context.conversation_id if context is not None else ""

    def add(key: str) -> tuple[str, JsonObject]:
        reminder = store.add(
            chat_id, args["text"], due, zone.key, untrusted=untrusted, conversation_id=conversation, once_key=key
        )
        marked = f" ({MARKED})" if untrusted else ""
        when = f"{due.strftime('%Y-%m-%d %H:%M')} {zone.key}"
        return f"reminder {reminder['id']} set for {when}: {reminder['text']}{marked}", {"id": reminder["id"]}

    return made_once(workspace, ADDED, context, _adding(args), add, "reminder", _stored(store))


#: Each reminder added, under the message its turn answers: the turn run again after a crash sets none twice.
ADDED = "state/reminders-added.jsonl"  # not under reminders/: memory indexes that folder


def done_before(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> bool:
    """This add was made before for the turn's message (a replay after a crash): nothing will be set, so the
    owner is not asked about it again."""
    if args.get("action") != "add":
        return False
    return made_before(workspace, ADDED, context, _adding(args), _stored(ReminderStore(workspace)))


def _stored(store: ReminderStore) -> Callable[[str], bool]:
    """Whether the store holds the reminder added under a ledger record's key (a kill may come between them)."""
    return lambda key: any(reminder.get("once_key") == key for reminder in store.list())


def _adding(args: SkillArgs) -> Action:
    """A reminder added, as the ledger matches it: the turn's nth add is its nth, whatever its words."""
    return Action("add", "", {key: args.get(key) for key in ("text", "at", "in_minutes")}, {"text": args.get("text")})


def local_time(text: str, zone: ZoneInfo) -> datetime:
    """``YYYY-MM-DD HH:MM`` (or ``T`` between, as tasks write it) in ``zone`` as an aware datetime;
    a time skipped by DST moves forward."""
    naive = datetime.strptime(text.replace("T", " ", 1), "%Y-%m-%d %H:%M")
    # The UTC round trip normalises a wall time inside a DST gap to a real instant.
    return naive.replace(tzinfo=zone).astimezone(UTC).astimezone(zone)


def _due(args: SkillArgs, now: datetime, zone: ZoneInfo) -> datetime:
    if bool(args.get("at")) == (args.get("in_minutes") is not None):
        raise ValueError("action 'add' needs exactly one of at ('YYYY-MM-DD HH:MM' local time) or in_minutes")
    if args.get("in_minutes") is not None:
        if args["in_minutes"] < 1:
            raise ValueError(f"in_minutes must be at least 1, got {args['in_minutes']}")
        if args["in_minutes"] > 10 * 366 * 24 * 60:
            raise ValueError(
                f"in_minutes {args['in_minutes']} is over ten years; use at ('YYYY-MM-DD HH:MM') for a date"
            )
        # In UTC: aware local arithmetic adds wall-clock time, an hour off across a DST change.
        return (now.astimezone(UTC) + timedelta(minutes=args["in_minutes"])).astimezone(zone)
    try:
        due = local_time(args["at"], zone)
    except ValueError:
        raise ValueError(f"at {args['at']!r} is not a real date and time (YYYY-MM-DD HH:MM)") from None
    if due <= now:
        raise ValueError(f"at {args['at']!r} is in the past; it is now {now.strftime('%Y-%m-%d %H:%M')} {zone.key}")
    return due


def _own(store: ReminderStore, chat_id: int | str, reminder_id: str) -> Reminder:
    for reminder in store.list(chat_id):
        if str(reminder.get("id")) == str(reminder_id).strip():
            return reminder
    raise LookupError(f"no reminder {reminder_id!r} in this chat")


def _not_pending(reminder: Mapping[str, object]) -> str:
    status = reminder.get("status")
    when = f" at {reminder['delivered_at']}" if status == "delivered" and reminder.get("delivered_at") else ""
    return f"reminder {reminder['id']} was already {status}{when}; nothing to cancel"


def _row(reminder: Mapping[str, object]) -> JsonObject:
    mark = {"untrusted": True} if is_untrusted(reminder) else {}  # first, so a result cut short still shows it
    return {**mark, "id": reminder["id"], "text": reminder["text"], "due_at": reminder["due_at"]}
