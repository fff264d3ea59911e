"""Built-in skill: the user's routines (when and steps)."""

from __future__ import annotations

from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import MARKED, context_untrusted, need, outside_label
from assistant_framework.stores import ROUTINES_FILE, RoutineStore
from assistant_framework.stores.provenance import shown
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Notes on routines (name, when, steps), such as a daily habit; never run or alert (that: jobs). To-dos: tasks."
)
CAPABILITIES = ["read", "write", "delete"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["set", "list", "delete"]},
        "name": {"type": "string"},
        "when": {"type": "string"},
        "steps": {"type": "string"},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    store = RoutineStore(workspace)
    action = args["action"]
    if action == "list":
        return [shown(routine) for routine in store.list()] or "no routines yet"
    need(args, action, "name")
    if action == "set":
        need(args, action, "steps")
        # In a turn with outside content the steps may be that content's words: stored marked.
        untrusted = context_untrusted(context)
        routine, how = store.set(args["name"], args["steps"], args.get("when", ""), untrusted=untrusted)
        return f"{how} routine {routine['name']!r} (saved to {ROUTINES_FILE}{', ' + MARKED if untrusted else ''})"
    routine = store.delete(args["name"])
    return f"deleted routine {outside_label(routine)}{routine['name']!r}"
