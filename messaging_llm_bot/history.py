"""The model-facing conversation history: ``conversations/<id>/history.json`` in the workspace.

Only user messages and final replies are kept (not intermediate skill rounds), so the history
stays compact and byte-stable for prompt caching. The full log (L0) is the memory module's.
"""

from __future__ import annotations

import json
from datetime import datetime

from assistant_framework.memory.log import CONVERSATIONS_DIR, safe_conversation_id
from assistant_framework.workspace import Workspace


def conversation_dir(conversation_id: str) -> str:
    """Workspace folder of a conversation, the same one the memory module's L0 log uses."""
    return f"{CONVERSATIONS_DIR}/{safe_conversation_id(conversation_id)}"


def message_chars(message: dict) -> int:
    """Size of one message for budgeting (its content plus a small per-message overhead)."""
    return len(str(message.get("content") or "")) + 8


def pair_groups(messages: list[dict]) -> list[list[dict]]:
    """Split history into groups that start at each user message (a user/assistant pair)."""
    groups: list[list[dict]] = []
    for message in messages:
        if message.get("role") == "user" or not groups:
            groups.append([message])
        else:
            groups[-1].append(message)
    return groups


def trim_history(messages: list[dict], budget_chars: int) -> list[dict]:
    """Drop whole pairs, oldest first, until the history fits ``budget_chars`` (pure)."""
    groups = pair_groups(messages)
    sizes = [sum(message_chars(m) for m in g) for g in groups]
    total = sum(sizes)
    start = 0
    while start < len(groups) and total > budget_chars:
        total -= sizes[start]
        start += 1
    return [m for g in groups[start:] for m in g]


def prompt_messages(history: list[dict]) -> list[dict]:
    """History entries as Chat Completions messages (role and content only)."""
    return [{"role": m["role"], "content": m["content"]} for m in history]


class HistoryStore:
    """Load, append (trimmed) and clear per-conversation history files."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def _file(self, conversation_id: str) -> str:
        return f"{conversation_dir(conversation_id)}/history.json"

    def load(self, conversation_id: str) -> list[dict]:
        """The stored history (oldest first); an unreadable file counts as empty."""
        try:
            data = self.workspace.read_json(self._file(conversation_id), default=[])
        except ValueError:
            return []
        if not isinstance(data, list):
            return []
        return [m for m in data if isinstance(m, dict) and m.get("role") in ("user", "assistant") and isinstance(m.get("content"), str)]

    def append_pair(self, conversation_id: str, user_text: str, reply: str, *, budget_chars: int, when: datetime | None = None) -> list[dict]:
        """Add one user/assistant pair and store the history trimmed to the budget; returns it."""
        stamp = when.isoformat(timespec="seconds") if when else None
        new = [{"role": "user", "content": user_text}, {"role": "assistant", "content": reply}]
        if stamp:
            for message in new:
                message["time"] = stamp
        history = trim_history(self.load(conversation_id) + new, budget_chars)
        # One message per line: readable, and encoded by the fast C encoder (no indent).
        lines = ",\n".join(json.dumps(m, ensure_ascii=False) for m in history)
        self.workspace.write_text(self._file(conversation_id), f"[\n{lines}\n]\n" if history else "[]\n")
        return history

    def clear(self, conversation_id: str) -> int:
        """Delete the history; returns how many messages it had."""
        count = len(self.load(conversation_id))
        self.workspace.delete(self._file(conversation_id))
        return count
