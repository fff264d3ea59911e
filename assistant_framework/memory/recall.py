"""Recall policy: what one conversation may see, and the marked block put into the prompt.

Pure functions; the MemoryService applies them. Turns of other chats are never recalled;
owner data (notes, facts, profile, collectors) only in private chats or chats the owner
listed in ``memory.share_owner_data_with``; excluded chats get nothing at all.
"""

from __future__ import annotations

import fnmatch

from ..config.settings import MemorySettings
from ..skills.support import OUTSIDE_LABEL
from .search import MemoryHit, Scope

RECALL_HEADER = "[Recalled memory — may be relevant]"
#: Sources whose text came from outside (feeds, mail, calendars, documents sent in a chat): data, never the
#: owner's instructions.
OUTSIDE_SOURCE_PREFIXES = ("collector:", "documents")


def matches_any(conversation_id: str | int, patterns: list[str]) -> bool:
    """True when the id equals or fnmatch-matches one of the patterns (ids may be ints)."""
    text = str(conversation_id)
    return any(text == str(p) or fnmatch.fnmatchcase(text, str(p)) for p in patterns or ())


def is_excluded(conversation_id: str | int, settings: MemorySettings) -> bool:
    """Chats listed in memory.exclude_chats are neither logged nor given recall."""
    return matches_any(conversation_id, list(settings.exclude_chats))


def recall_scope(conversation_id: str | int, settings: MemorySettings, private: bool) -> Scope:
    """This conversation's turns and episodes, plus owner data when allowed."""
    shared = matches_any(conversation_id, list(settings.share_owner_data_with))
    return Scope(conversation=str(conversation_id), owner_data=private or shared)


def recall_lines(hits: list[MemoryHit], budget_chars: int) -> list[tuple[MemoryHit, str]]:
    """Each hit that fits the block within ``budget_chars``, with its line (a long one cut); the rest
    are left out, so they are not in the prompt."""
    if not hits or budget_chars <= len(RECALL_HEADER) + 10:
        return []
    shown: list[tuple[MemoryHit, str]] = []
    used = len(RECALL_HEADER)
    for hit in hits:
        date = (hit.time or "")[:10]
        label = f"{hit.source}, {date}" if date else hit.source
        outside = f"{OUTSIDE_LABEL} " if is_outside(hit) else ""  # the model weighs each hit by its origin
        line = f"- ({label}) {outside}{hit.snippet}"
        room = budget_chars - used - 1
        if len(line) > room:
            if room < 40:
                break
            line = line[: room - 1] + "…"
        shown.append((hit, line))
        used += len(line) + 1
    return shown


def format_recall(hits: list[MemoryHit], budget_chars: int) -> str:
    """The marked recall block, whole lines only, within ``budget_chars``; '' when nothing fits."""
    lines = [line for _, line in recall_lines(hits, budget_chars)]
    return "\n".join([RECALL_HEADER, *lines]) if lines else ""


def is_outside(hit: MemoryHit) -> bool:
    """True when a hit's text came from outside: a collector item, or a logged turn marked ``untrusted``
    (a forwarded message, an attachment, or a reply written from such content)."""
    return hit.source.startswith(OUTSIDE_SOURCE_PREFIXES) or hit.outside
