"""Built-in skill: structured facts (subject, attribute, value) with history."""

from __future__ import annotations

from assistant_framework.skills.support import need
from assistant_framework.stores import FACTS_FILE, FactStore
from assistant_framework.workspace import Workspace

DESCRIPTION = "Store a fact as subject/attribute/value (Anna/allergy/nuts) or look facts up."
CAPABILITIES = ["read", "write"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["add", "lookup"]},
        "subject": {"type": "string"},
        "attribute": {"type": "string"},
        "value": {"type": "string"},
        "query": {"type": "string"},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: dict, context=None):
    store = FactStore(workspace)
    if args["action"] == "add":
        need(args, "add", "subject", "attribute", "value")
        ref = getattr(context, "conversation_id", None) or None
        fact, action = store.add(args["subject"], args["attribute"], args["value"], source="skill", source_ref=ref)
        what = f"{fact['subject']} / {fact['attribute']} = {fact['value']}"
        if action == "duplicate":
            return f"already known ({fact['id']}): {what}"
        return f"{action} fact {fact['id']}: {what} (saved to {FACTS_FILE})"
    found = store.lookup(args.get("subject"), args.get("attribute"), args.get("query"))
    keys = ("id", "subject", "attribute", "value", "time")
    return [{key: fact.get(key) for key in keys} for fact in found] or "no matching facts"
