"""Memory honesty: a reply that claims a save must match a real workspace write in the turn.

Uses ``check_memory_claim`` from the memory module when it exists; until then a small local
check with the same contract: ``(reply, wrote_memory) -> note to append or None``.
"""

from __future__ import annotations

import re
from typing import Any, Callable

NOTHING_SAVED_NOTE = "(Nothing was saved — say 'remember ...' to store it.)"

_CLAIM_RE = re.compile(
    r"\b(?:i(?:'ll| will|'ve| have)?\s+(?:also\s+)?(?:remember|save|saved|note|noted|store|stored|keep in mind|"
    r"made a note|added (?:it|that|this)|written (?:it|that) down|write (?:it|that) down))\b"
    r"|^\s*(?:saved|noted|stored|got it,? i'll remember)\b"
    r"|\b(?:has|have) been (?:saved|noted|stored|remembered)\b",
    re.IGNORECASE | re.MULTILINE,
)


def local_memory_claim(reply: str, wrote_memory: bool) -> str | None:
    """The honest note to append when the reply claims a save that did not happen, else None."""
    if wrote_memory or not _CLAIM_RE.search(reply or ""):
        return None
    return NOTHING_SAVED_NOTE


def _resolve_check() -> Callable[[str, bool], str | None]:
    try:
        from assistant_framework import memory as memory_package
    except ModuleNotFoundError as exc:
        if exc.name != "assistant_framework.memory":
            raise
        return local_memory_claim
    # The memory package exists before its claim check lands; the local one stands in until then.
    return getattr(memory_package, "check_memory_claim", local_memory_claim)


check_memory_claim: Callable[[str, bool], str | None] = _resolve_check()


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
    # The local check backs up the memory module's (which may still be a stub returning None).
    note = check_memory_claim(reply, wrote_memory) or local_memory_claim(reply, wrote_memory)
    if note:
        return f"{reply}\n\n{note}"
    shown = [p for p in dict.fromkeys(saved_to) if p not in reply]
    if wrote_memory and shown:
        return f"{reply}\n\n(saved to {', '.join(shown)})"
    return reply
