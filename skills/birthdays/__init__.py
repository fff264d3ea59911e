"""Built-in skill: birthdays, with the upcoming ones."""

from __future__ import annotations

from datetime import date
from typing import TypedDict

from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import MARKED, context_now, context_untrusted, need
from assistant_framework.stores import BIRTHDAYS_FILE, BirthdayStore
from assistant_framework.stores.provenance import is_untrusted, shown
from assistant_framework.stores.records import Birthday
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Birthdays by person (MM-DD or YYYY-MM-DD): add, update, find one, list the upcoming ones. Phone, email: contacts."
)
CAPABILITIES = ["read", "write"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["add", "update", "find", "upcoming"]},
        "name": {"type": "string"},
        "date": {
            "type": "string",
            "pattern": "^(\\d{4}-)?\\d{2}-\\d{2}$",
            "examples": ["1990-05-04", "05-04"],
        },  # examples: in errors only, not in the prompt
        "notes": {"type": "string"},
        "days": {"type": "integer"},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    store = BirthdayStore(workspace)
    action = args["action"]
    if action == "upcoming":
        today = context_now(context).date()
        if not 0 <= args.get("days", 30) <= 366:
            raise ValueError(f"days must be between 0 and 366 (a year ahead), got {args['days']}")
        found = store.upcoming(today, args.get("days", 30))
        return [
            _upcoming_row(when, entry, today) for when, entry in found
        ] or f"no birthdays in the next {args.get('days', 30)} days"
    if action == "find":
        query = args.get("name") or ""
        return [shown(entry) for entry in store.find(query)] or f"no birthday matches {query!r}"
    need(args, action, "name")
    if args.get("date"):
        _not_after(args["date"], context_now(context).date())
    # In a turn with outside content the values may be that content's words: the entry is marked.
    untrusted = context_untrusted(context)
    if action == "add":
        need(args, action, "date")
        entry = store.add(args["name"], args["date"], args.get("notes", ""), untrusted=untrusted)
        mark = ", " + MARKED if untrusted else ""
        return f"added birthday of {entry['name']} on {entry['date']} (saved to {BIRTHDAYS_FILE}{mark})"
    if not (args.get("date") or args.get("notes")):
        raise ValueError("action 'update' needs date or notes")
    return shown(store.update(args["name"], args.get("date"), args.get("notes"), untrusted=untrusted))


def _not_after(text: str, today: date) -> None:
    """ValueError when a ``YYYY-MM-DD`` birthday is after ``today`` (a model's "this year's" date)."""
    if len(text) == 10 and text[:4].isdigit() and text > today.isoformat():
        raise ValueError(
            f"birthday {text!r} is in the future; the year is the year of birth: give MM-DD "
            f"({text[5:]!r}) when it is not known"
        )


class Upcoming(TypedDict, total=False):
    """A birthday in ``list``'s answer: when it falls next, in how many days, the age it turns (year known)."""

    #: First, so a result cut short still shows it.
    untrusted: bool
    name: str | None
    date: str
    in_days: int
    turns: int
    notes: str


def _upcoming_row(when: date, entry: Birthday, today: date) -> Upcoming:
    row: Upcoming = {"untrusted": True} if is_untrusted(entry) else {}
    row["name"] = entry.get("name")
    row["date"] = when.isoformat()
    row["in_days"] = (when - today).days
    born = str(entry.get("date", ""))
    if len(born) == 10:
        row["turns"] = when.year - int(born[:4])
    if entry.get("notes"):
        row["notes"] = entry["notes"]
    return row
