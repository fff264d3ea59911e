"""Built-in skill: search long-term memory (conversations, notes, facts, tasks, collectors...)."""

from __future__ import annotations

from assistant_framework.memory.skillsupport import format_hits, is_private, memory_for
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import context_now, need
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Search all that is remembered (past chats, notes, facts, tasks, mail, feeds) by words, when unsure where it is."
)
CAPABILITIES = ["read"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20},
        "source": {"type": "string"},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> str:
    need(args, "search", "query")
    query = args["query"]
    conversation = (context.conversation_id if context is not None else "") or None
    with memory_for(workspace, context) as memory:
        hits = memory.search(
            query,
            limit=int(args.get("limit") or 5),
            source=args.get("source") or None,
            within=conversation,
            private=is_private(context),
            now=context_now(context),
        )
    return format_hits(hits, query)
