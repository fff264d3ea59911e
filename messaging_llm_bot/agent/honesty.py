"""Memory honesty: a reply that claims a save must match a real workspace write in the turn.

``check_memory_claim(reply, wrote_memory) -> claim kind or None`` comes from the memory module.
A claim without a write gets an honest note; a real write shows where it went.
"""

from __future__ import annotations

import re
from typing import Any

from assistant_framework.memory import check_memory_claim

NOTHING_SAVED_NOTE = "(Nothing was saved — say 'remember ...' to store it.)"

#: ``action`` values of skills with the write capability that only read.
READ_ACTIONS = frozenset(
    {
        "read",
        "list",
        "search",
        "find",
        "lookup",
        "get",
        "show",
        "upcoming",
        "now",
        "weekday",
        "days_until",
        "next",
        "status",
    }
)
_PATH_IN_TEXT = re.compile(r"\b(?:to|in|into)\s+'?([\w.@+-]+(?:/[\w.@+-]+)+)'?")
_ANY_PATH = re.compile(r"(?<![\w/:.])([\w.@+-]+(?:/[\w.@+-]+)+)")


def is_write_call(capabilities: list[str] | None, args: Any) -> bool:
    """True when a successful call of a skill probably changed the workspace."""
    if "write" not in (capabilities or []) and "delete" not in (capabilities or []):
        return False
    action = args.get("action") if isinstance(args, dict) else None
    return not (isinstance(action, str) and action.lower() in READ_ACTIONS)


def saved_location(value: Any) -> str | None:
    """Where a skill result says it wrote: a ``path``/``file`` field, or "... to notes/x.md" in text."""
    if isinstance(value, dict):
        return next(iter(named_paths(value)), None)
    if isinstance(value, str):
        match = _PATH_IN_TEXT.search(value[:500])
        if match:
            return match.group(1).rstrip(".,:;")
    return None


def named_paths(value: Any) -> list[str]:
    """Every workspace path a write call's result names ("saved to facts/facts.json", "removed from notes/x.md",
    a ``path`` field): the files it changed, as far as it says."""
    if isinstance(value, dict):
        return [where for key in ("path", "file", "saved_to") if isinstance(where := value.get(key), str) and where]
    if isinstance(value, str):
        return [match.rstrip(".,:;") for match in _ANY_PATH.findall(value[:500])]
    return []


def honest_reply(reply: str, saved_to: list[str], wrote_memory: bool) -> str:
    """The reply with a note: where things were saved, or that nothing was saved despite a claim."""
    if check_memory_claim(reply, wrote_memory):
        return f"{reply}\n\n{NOTHING_SAVED_NOTE}"
    shown = [p for p in dict.fromkeys(saved_to) if p not in reply]
    if wrote_memory and shown:
        return f"{reply}\n\n(saved to {', '.join(shown)})"
    return reply
