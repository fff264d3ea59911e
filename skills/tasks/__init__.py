"""Built-in skill: the user's to-do list with optional due dates."""

from __future__ import annotations

from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import MARKED, context_now, context_untrusted, need, outside_label
from assistant_framework.stores import TASKS_FILE, TaskStore
from assistant_framework.stores.provenance import shown
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "To-do list: things to do, optionally with a due date but no alert: add, list, complete, "
    "delete. Timed alerts: reminders."
)
CAPABILITIES = ["read", "write", "delete"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["add", "list", "complete", "delete"]},
        "title": {"type": "string"},
        "due": {
            "type": "string",
            "pattern": "^\\d{4}-\\d{2}-\\d{2}([ T]\\d{2}:\\d{2})?$",
            "examples": ["2026-12-01", "2026-12-01 17:00"],
        },  # examples: in errors only, not in the prompt
        "status": {"enum": ["open", "done", "due", "all"]},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    store = TaskStore(workspace)
    action = args["action"]
    if action == "list":
        tasks = store.list(args.get("status", "open"), today=context_now(context).date())
        return [shown(task) for task in tasks] or f"no {args.get('status', 'open')} tasks"
    need(args, action, "title")
    if action == "add":
        # In a turn with outside content the task may be that content's words: stored marked.
        untrusted = context_untrusted(context)
        task = store.add(args["title"], args.get("due"), "", untrusted=untrusted)
        due = f" due {task['due']}" if task["due"] else ""
        return (
            f"added task {task['id']}: {task['title']}{due} (saved to {TASKS_FILE}{', ' + MARKED if untrusted else ''})"
        )
    if action == "complete":
        task = store.complete(args["title"])
        return f"completed task {task['id']}: {outside_label(task)}{task['title']}"
    task = store.delete(args["title"])
    return f"deleted task {task['id']}: {outside_label(task)}{task['title']}"
