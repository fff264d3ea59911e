"""How index rows are keyed and dated: per-conversation rowid slots, scope tokens, date words.

Each conversation owns an id slot; its rows take rowids in ``[slot << 32, (slot + 1) << 32)``
(owner data: slot 0), so a search scoped to one conversation is a rowid range FTS5 can seek.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

SLOT_BITS = 32
_DATE_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})")


def slot_range(slot: int) -> tuple[int, int]:
    """The inclusive rowid range of an id slot (see the module docstring)."""
    return slot << SLOT_BITS, ((slot + 1) << SLOT_BITS) - 1


def slot_of(row_id: int) -> int:
    """The id slot a row id belongs to."""
    return row_id >> SLOT_BITS


def scope_token(conversation: str | None) -> str:
    """One FTS token per conversation ('owner' for rows of no conversation).

    Searches no longer match on it (id slots scope them); the column stays, weighted 0, so
    every row's token count, and with it BM25's length normalisation, is unchanged."""
    if conversation is None:
        return "owner"
    return "c" + hashlib.sha1(conversation.encode("utf-8")).hexdigest()[:16]


def date_words(iso: str | None) -> str:
    """The row's date in words ('8 May 2023'), so a query naming a date matches it."""
    if not iso:
        return ""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return ""
    return f"{moment.day} {moment.strftime('%B')} {moment.year}"


def content_hash(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def default_time(rel: str, mtime: float) -> str:
    found = _DATE_IN_NAME.search(rel.rsplit("/", 1)[-1])
    if found:
        return found.group(1) + "T00:00:00+00:00"
    return datetime.fromtimestamp(mtime, UTC).isoformat(timespec="seconds")
