"""Built-in skill: remember, list and forget short learnings (added to every prompt)."""

from __future__ import annotations

from assistant_framework.skills.support import need
from assistant_framework.stores import LearningStore
from assistant_framework.workspace import Workspace

DESCRIPTION = "Remember a lasting lesson or user preference; list or forget learnings."
CAPABILITIES = ["read", "write", "delete"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["remember", "list", "forget"]},
        "text": {"type": "string"},
        "topic": {"type": "string"},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: dict):
    store = LearningStore(workspace)
    action = args["action"]
    if action == "remember":
        need(args, action, "text")
        saved = store.add(args["text"], args.get("topic"))
        verb = "saved to" if saved["added"] else "already in"
        return f"{verb} {saved['path']}: - {saved['text']}"
    if action == "list":
        items = store.list(args.get("topic"))
        return items or "no learnings yet"
    need(args, action, "text")
    removed = store.forget(args["text"], args.get("topic"))
    return f"forgot from learnings/{removed['topic']}.md: {removed['text']}"
