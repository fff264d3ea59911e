"""Memory honesty: a reply that claims a save must match a real workspace write in the turn.

``check_memory_claim(reply, wrote_memory) -> claim kind or None`` comes from the memory module;
a small local check with the same contract stands in when that module is not installed.
A claim without a write gets an honest note; a real write shows where it went.
"""

from __future__ import annotations

import re
from typing import Any

NOTHING_SAVED_NOTE = "(Nothing was saved — say 'remember ...' to store it.)"

_CLAIM_RE = re.compile(
    r"\b(?:i(?:'ll| will|'ve| have)?\s+(?:also\s+)?(?:remember|save|saved|note|noted|store|stored|keep in mind|"
    r"made a note|added (?:it|that|this)|written (?:it|that) down|write (?:it|that) down))\b"
    r"|^\s*(?:saved|noted|stored|got it,? i'll remember)\b"
    r"|\b(?:has|have) been (?:saved|noted|stored|remembered)\b",
    re.IGNORECASE | re.MULTILINE,
)


def local_memory_claim(reply: str, wrote_memory: bool) -> str | None:
    """Fallback claim check: the kind "save" for a claimed save without a write, else None."""
    if wrote_memory or not _CLAIM_RE.search(reply or ""):
        return None
    return "save"


try:
    from assistant_framework.memory import check_memory_claim
except ModuleNotFoundError as exc:  # memory is optional; any other import failure is a bug
    if exc.name not in ("assistant_framework.memory", "assistant_framework.memory.claims"):
        raise
    check_memory_claim = local_memory_claim


#: ``action`` values of skills with the write capability that only read.
READ_ACTIONS = frozenset({"read", "list", "search", "find", "lookup", "get", "show", "upcoming", "now",
                          "weekday", "days_until", "next", "status"})
_PATH_IN_TEXT = re.compile(r"\b(?:to|in|into)\s+'?([\w.@+-]+(?:/[\w.@+-]+)+)'?")


def is_write_call(capabilities: list[str] | None, args: Any) -> bool:
    """True when a successful call of a skill probably changed the workspace."""
    if "write" not in (capabilities or []) and "delete" not in (capabilities or []):
        return False
    action = args.get("action") if isinstance(args, dict) else None
    return not (isinstance(action, str) and action.lower() in READ_ACTIONS)


def saved_location(value: Any) -> str | None:
    """Where a skill result says it wrote: a ``path``/``file`` field, or "... to notes/x.md" in text."""
    if isinstance(value, dict):
        for key in ("path", "file", "saved_to"):
            where = value.get(key)
            if isinstance(where, str) and where:
                return where
    if isinstance(value, str):
        match = _PATH_IN_TEXT.search(value[:500])
        if match:
            return match.group(1).rstrip(".,:;")
    return None


def honest_reply(reply: str, saved_to: list[str], wrote_memory: bool) -> str:
    """The reply with a note: where things were saved, or that nothing was saved despite a claim."""
    if check_memory_claim(reply, wrote_memory):
        return f"{reply}\n\n{NOTHING_SAVED_NOTE}"
    shown = [p for p in dict.fromkeys(saved_to) if p not in reply]
    if wrote_memory and shown:
        return f"{reply}\n\n(saved to {', '.join(shown)})"
    return reply
