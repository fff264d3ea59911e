"""The owner's chat a channel learns only while it runs (Matrix: the direct room the owner wrote in; Slack's and
Discord's DM: conversation/owner_dm.py), kept in ``state/owner_chats.json`` as ``{channel: conversation id}``, or
``{channel: {"chat": conversation id, "owner": the owner's id}}`` when it was learned for a named owner: where the
registry (routes.py) finds it for a served client's search, the owner's home conversation and a job run's check,
which know only the config; one learned for an owner counts only while the config names that owner. A channel
whose owner's chat is in the config (a Telegram id, an email address) needs none of this."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from assistant_framework.workspace import Workspace

OWNER_CHATS_FILE = "state/owner_chats.json"
MAX_ID_CHARS = 500  # a conversation id longer than this is not kept (no platform's is)
_lock = threading.Lock()


@dataclass(frozen=True)
class NotedChat:
    """The owner's chat a channel learned, and for which owner (None: not said, as Matrix and older versions)."""

    chat: str
    owner: str | None = None


def note_owner_chat(workspace: Workspace, channel: str, conversation_id: str, owner: object = None) -> None:
    """Keep ``conversation_id`` as the owner's chat on ``channel`` (a new one replaces the old), learned for
    ``owner`` when given."""
    if not conversation_id or len(conversation_id) > MAX_ID_CHARS:
        return
    new = NotedChat(conversation_id, None if owner is None else str(owner))
    with _lock:
        noted = _read(workspace)
        if noted.get(channel) != new:
            kept = {**noted, channel: new}
            workspace.write_json(OWNER_CHATS_FILE, {name: _written(one) for name, one in kept.items()})


def noted_owner_chats(workspace: Workspace, owner: Callable[[str], object]) -> dict[str, str]:
    """``{channel: conversation id}`` as kept, leaving out a chat learned for another owner than ``owner(channel)``
    names now (the config's: a ``/reload`` changed it); an unreadable or damaged file is none."""
    return {
        channel: one.chat
        for channel, one in _read(workspace).items()
        if one.owner is None or one.owner == str(owner(channel))
    }


def _read(workspace: Workspace) -> dict[str, NotedChat]:
    try:
        data = workspace.read_json(OWNER_CHATS_FILE, default={})
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    noted: dict[str, NotedChat] = {}
    for channel, value in data.items():
        if isinstance(value, str) and value:
            noted[channel] = NotedChat(value)
        elif isinstance(value, dict) and isinstance(value.get("chat"), str) and isinstance(value.get("owner"), str):
            noted[channel] = NotedChat(value["chat"], value["owner"])
    return noted


def _written(noted: NotedChat) -> str | dict[str, str]:
    return noted.chat if noted.owner is None else {"chat": noted.chat, "owner": noted.owner}
