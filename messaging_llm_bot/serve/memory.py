"""The owner's memory as served clients see it, assembled with what only the bot knows: which chats are the
owner's own (conversation/routes.py) and today's /now digest (conversation/digest.py)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from assistant_framework.config.settings import Settings
from assistant_framework.memory.log import safe_conversation_id
from assistant_framework.serve.memory_tools import MemoryTools
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.digest import build_digest
from messaging_llm_bot.conversation.routes import home_conversation, owner_conversation_ids


def memory_tools(
    settings: Settings, workspace: Workspace, memory: Any, refresh_seconds: float | None = None
) -> MemoryTools:
    """What a served client reads and writes: the owner's chats and data, never a guest's. ``refresh_seconds``:
    outside the bot's process, how often a search first reads what changed (MemoryTools)."""
    # The index keeps a chat's folder name (``tg_7-<hash>``): the same name for the same id.
    owners = frozenset(safe_conversation_id(one) for one in owner_conversation_ids(settings))

    def now_digest() -> str:
        return build_digest(workspace, datetime.now(timezone.utc), settings.runtime.timezone)

    return MemoryTools(
        workspace=workspace,
        memory=memory,
        owner_conversation=owners.__contains__,
        home_conversation=home_conversation(settings),
        max_results=settings.serve.max_results,
        now_digest=now_digest,
        refresh_seconds=refresh_seconds,
    )
