"""Built-in skill: the user's contacts (name, phone, email, notes)."""

from __future__ import annotations

from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import MARKED, context_untrusted, need
from assistant_framework.stores import CONTACTS_FILE, ContactStore
from assistant_framework.stores.provenance import shown
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "People's phone numbers, emails and addresses: add, update or find a person. Birthdays: "
    "birthdays; other facts: facts."
)
CAPABILITIES = ["read", "write"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["add", "update", "find"]},
        "name": {"type": "string"},
        "phone": {"type": "string"},
        "email": {"type": "string"},
        "notes": {"type": "string"},
        "query": {"type": "string"},
    },
    "required": ["action"],
    "additionalProperties": False,
}
_FIELDS = ("phone", "email", "notes")


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    store = ContactStore(workspace)
    action = args["action"]
    if action == "find":
        query = args.get("query") or args.get("name") or ""
        return [shown(contact) for contact in store.find(query)] or f"no contact matches {query!r}"
    need(args, action, "name")
    fields = {key: args[key] for key in _FIELDS if args.get(key)}
    # In a turn with outside content the values may be that content's words: the contact is marked.
    untrusted = context_untrusted(context)
    if action == "add":
        contact = store.add(args["name"], untrusted=untrusted, **fields)
        return f"added contact {contact['name']} (saved to {CONTACTS_FILE}{', ' + MARKED if untrusted else ''})"
    if not fields:
        raise ValueError("action 'update' needs at least one of phone, email, notes")
    return shown(store.update(args["name"], untrusted=untrusted, **fields))
