"""Built-in skill: the user's contacts (name, phone, email, notes)."""

from __future__ import annotations

from assistant_framework.skills.support import need
from assistant_framework.stores import CONTACTS_FILE, ContactStore
from assistant_framework.workspace import Workspace

DESCRIPTION = "The user's contacts (name, phone, email, notes): add, update or find."
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


def run(workspace: Workspace, args: dict):
    store = ContactStore(workspace)
    action = args["action"]
    if action == "find":
        query = args.get("query") or args.get("name") or ""
        return store.find(query) or f"no contact matches {query!r}"
    need(args, action, "name")
    fields = {key: args[key] for key in _FIELDS if args.get(key)}
    if action == "add":
        contact = store.add(args["name"], **fields)
        return f"added contact {contact['name']} (saved to {CONTACTS_FILE})"
    if not fields:
        raise ValueError("action 'update' needs at least one of phone, email, notes")
    return store.update(args["name"], **fields)
