"""Built-in skill: the user's routines (when and steps)."""

from __future__ import annotations

from assistant_framework.skills.support import need
from assistant_framework.stores import ROUTINES_FILE, RoutineStore
from assistant_framework.workspace import Workspace

DESCRIPTION = "Save the user's routines (name, when, steps), list or delete them."
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


def run(workspace: Workspace, args: dict):
    store = RoutineStore(workspace)
    action = args["action"]
    if action == "list":
        return store.list() or "no routines yet"
    need(args, action, "name")
    if action == "set":
        need(args, action, "steps")
        routine, how = store.set(args["name"], args["steps"], args.get("when", ""))
        return f"{how} routine {routine['name']!r} (saved to {ROUTINES_FILE})"
    routine = store.delete(args["name"])
    return f"deleted routine {routine['name']!r}"
