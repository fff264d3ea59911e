"""Built-in skill: search what was said in this conversation, optionally within dates."""

from __future__ import annotations

from assistant_framework.memory.skillsupport import format_hits, is_private, memory_for, parse_when
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import context_now, need
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Search this chat's past messages by words, optionally between dates (since/until): what was said here, when."
)
CAPABILITIES = ["read"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20},
        "conversation": {"type": "string"},
        "since": {"type": "string"},
        "until": {"type": "string"},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> str:
    need(args, "search", "query")
    query = args["query"]
    current = (context.conversation_id if context is not None else "") or None
    conversation = args.get("conversation") or current
    if current and conversation != current and not is_private(context):
        # Another chat's messages are only for the owner, in a private chat.
        raise ValueError(f"conversation {conversation!r} can only be searched from a private chat with the owner")
    tz = (context.timezone if context is not None else "") or "UTC"
    with memory_for(workspace, context) as memory:
        hits = memory.search(
            query,
            limit=int(args.get("limit") or 5),
            source="conversation",
            conversation=conversation,
            since=parse_when(args.get("since"), tz, "since"),
            until=parse_when(args.get("until"), tz, "until", end=True),
            now=context_now(context),
        )
    return format_hits(hits, query)
