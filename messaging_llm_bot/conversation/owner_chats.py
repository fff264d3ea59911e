"""The owner's chat a channel learns only while it runs (Matrix: the direct room the owner wrote in), kept in
``state/owner_chats.json`` as ``{channel: conversation id}``: where the registry (routes.py) finds it for a
served client's search and the owner's home conversation, which know only the config. A channel whose owner's
chat is in the config (a Telegram id, an email address) needs none of this."""

from __future__ import annotations

import threading

from assistant_framework.workspace import Workspace

OWNER_CHATS_FILE = "state/owner_chats.json"
MAX_ID_CHARS = 500  # a conversation id longer than this is not kept (no platform's is)
_lock = threading.Lock()


def note_owner_chat(workspace: Workspace, channel: str, conversation_id: str) -> None:
    """Keep ``conversation_id`` as the owner's chat on ``channel`` (a new one replaces the old)."""
    if not conversation_id or len(conversation_id) > MAX_ID_CHARS:
        return
    with _lock:
        noted = noted_owner_chats(workspace)
        if noted.get(channel) != conversation_id:
            workspace.write_json(OWNER_CHATS_FILE, {**noted, channel: conversation_id})


def noted_owner_chats(workspace: Workspace) -> dict[str, str]:
    """``{channel: conversation id}`` as kept; an unreadable or damaged file is none."""
    try:
        data = workspace.read_json(OWNER_CHATS_FILE, default={})
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str) and v}
