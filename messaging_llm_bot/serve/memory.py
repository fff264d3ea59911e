"""The owner's memory as served clients see it, assembled with what only the bot knows: which chats are the
owner's own (conversation/routes.py) and today's /now digest (conversation/digest.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from assistant_framework.config.settings import Settings
from assistant_framework.memory.log import logged_conversation_id, safe_conversation_id
from assistant_framework.serve.memory_tools import MemoryTools
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.digest import build_digest
from messaging_llm_bot.conversation.routes import home_conversation, is_owner_conversation, owner_conversation_ids

MAX_FOLDERS_KEPT = 10_000  # folders whose logged id is kept; beyond it each is read again when asked


def memory_tools(
    settings: Settings, workspace: Workspace, memory: Any, refresh_seconds: float | None = None
) -> MemoryTools:
    """What a served client reads and writes: the owner's chats and data, never a guest's. ``refresh_seconds``:
    outside the bot's process, how often a search first reads what changed (MemoryTools)."""
    owner_chat = owner_folder(settings, workspace)

    def now_digest() -> str:
        return build_digest(workspace, datetime.now(UTC), settings.runtime.timezone)

    return MemoryTools(
        workspace=workspace,
        memory=memory,
        owner_conversation=owner_chat,
        home_conversation=home_conversation(settings, workspace),
        max_results=settings.serve.max_results,
        now_digest=now_digest,
        refresh_seconds=refresh_seconds,
    )


def owner_folder(settings: Settings, workspace: Workspace) -> Callable[[str], bool]:
    """Whether a chat's log folder (the index keeps the folder's name, ``tg_7-<hash>``) is one of the owner's
    chats (routes.py: the configured ones, the learned ones, their threads). A folder that is none of their
    names is judged by the id its log was written for: a thread's name does not show whose thread it is."""
    ids: dict[str, str] = {}  # folder -> its logged id, read once (a folder's id never changes)

    def owner(folder: str) -> bool:
        if folder in {safe_conversation_id(one) for one in owner_conversation_ids(settings, workspace)}:
            return True
        raw = ids.get(folder)
        if raw is None:
            raw = logged_conversation_id(workspace, folder) or ""
            if len(ids) < MAX_FOLDERS_KEPT:
                ids[folder] = raw
        # Asked now, not once: a chat a channel learned since (Matrix's room) counts at once.
        return bool(raw) and is_owner_conversation(settings, workspace)(raw)

    return owner
