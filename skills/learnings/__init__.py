"""Built-in skill: remember, list and forget short learnings (added to every prompt)."""

from __future__ import annotations

from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import MARKED, context_untrusted, need, outside_label
from assistant_framework.stores import LearningStore
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "How the user wants you to behave: lasting preferences and lessons for your answers. Remember, list or forget one."
)
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


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    store = LearningStore(workspace)
    action = args["action"]
    if action == "remember":
        need(args, action, "text")
        # In a turn with outside content (the owner confirmed the write) the topic file is marked.
        saved = store.add(args["text"], args.get("topic"), untrusted=context_untrusted(context))
        verb = "saved to" if saved["added"] else "already in"
        marked = f" (the topic file is {MARKED})" if saved.get("untrusted") else ""
        return f"{verb} {saved['path']}: - {saved['text']}{marked}"
    if action == "list":
        items = store.list(args.get("topic"))
        return items or "no learnings yet"
    need(args, action, "text")
    removed = store.forget(args["text"], args.get("topic"))
    return f"forgot from learnings/{removed['topic']}.md: {outside_label(removed)}{removed['text']}"
