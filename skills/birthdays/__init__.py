"""Built-in skill: birthdays, with the upcoming ones."""

from __future__ import annotations

from assistant_framework.skills.support import context_now, need
from assistant_framework.stores import BIRTHDAYS_FILE, BirthdayStore
from assistant_framework.workspace import Workspace

DESCRIPTION = "Birthdays (MM-DD or YYYY-MM-DD): add, update, find by name, list upcoming."
CAPABILITIES = ["read", "write"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["add", "update", "find", "upcoming"]},
        "name": {"type": "string"},
        "date": {"type": "string", "pattern": "^(\\d{4}-)?\\d{2}-\\d{2}$"},
        "notes": {"type": "string"},
        "days": {"type": "integer"},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: dict, context=None):
    store = BirthdayStore(workspace)
    action = args["action"]
    if action == "upcoming":
        today = context_now(context).date()
        if args.get("days", 30) < 0:
            raise ValueError(f"days must not be negative, got {args['days']}")
        found = store.upcoming(today, args.get("days", 30))
        return [_upcoming_row(when, entry, today) for when, entry in found] or f"no birthdays in the next {args.get('days', 30)} days"
    if action == "find":
        query = args.get("name") or ""
        return store.find(query) or f"no birthday matches {query!r}"
    need(args, action, "name")
    if action == "add":
        need(args, action, "date")
        entry = store.add(args["name"], args["date"], args.get("notes", ""))
        return f"added birthday of {entry['name']} on {entry['date']} (saved to {BIRTHDAYS_FILE})"
    if not (args.get("date") or args.get("notes")):
        raise ValueError("action 'update' needs date or notes")
    return store.update(args["name"], args.get("date"), args.get("notes"))


def _upcoming_row(when, entry: dict, today) -> dict:
    row = {"name": entry.get("name"), "date": when.isoformat(), "in_days": (when - today).days}
    born = str(entry.get("date", ""))
    if len(born) == 10:
        row["turns"] = when.year - int(born[:4])
    if entry.get("notes"):
        row["notes"] = entry["notes"]
    return row
