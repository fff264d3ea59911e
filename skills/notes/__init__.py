"""Built-in skill: add, search, read and list Markdown notes."""

from __future__ import annotations

from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import MARKED, context_untrusted, need
from assistant_framework.stores import NoteStore
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Free-text notes with a title (lists, ideas, how-tos, anything to jot down): add, search "
    "by words, read by title, list."
)
CAPABILITIES = ["read", "write"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["add", "search", "read", "list"]},
        "title": {"type": "string"},
        "body": {"type": "string"},
        "query": {"type": "string"},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    store = NoteStore(workspace)
    action = args["action"]
    if action == "add":
        need(args, action, "title")
        # In a turn with outside content the note may be that content's words: stored marked.
        untrusted = context_untrusted(context)
        saved = store.add(args["title"], args.get("body", ""), untrusted=untrusted)
        return f"saved note {saved['title']!r} to {saved['path']}{f' ({MARKED})' if untrusted else ''}"
    if action == "search":
        query = str(args.get("query") or args.get("title") or "")
        need({"query": query}, action, "query")
        return store.search(query) or f"no note matches {query!r}"
    if action == "read":
        name = str(args.get("title") or args.get("query") or "")
        need({"title": name}, action, "title")
        return store.read(name)
    return store.list() or "no notes yet"
