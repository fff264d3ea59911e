"""Shared by the memory_search and conversation_search skills: get a MemoryService, format hits."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from ..skills.support import OUTSIDE_LABEL
from ..workspace import Workspace
from .recall import is_outside
from .search import MemoryHit

if TYPE_CHECKING:
    from ..skills.spec import MemorySearch, SkillContext


@contextmanager
def memory_for(workspace: Workspace, context: SkillContext | None) -> Iterator[MemorySearch]:
    """The bot's MemoryService from ``context.services['memory']``, else one opened on the workspace."""
    service = context.services.get("memory") if context is not None else None
    if service is not None:
        yield service
        return
    from .service import MemoryService

    opened = MemoryService(workspace, context.config if context is not None else {}, start_worker=False)
    try:
        opened.refresh()
        yield opened
    finally:
        opened.close()


def is_private(context: SkillContext | None) -> bool:
    """The owner's own private chat (``context.private``, set by the bot); no context means a local call."""
    return context is None or context.private


def parse_when(value: str | None, tz: str, name: str, end: bool = False) -> datetime | None:
    """An ISO date or datetime argument as an aware datetime (dates at midnight in ``tz``;
    with ``end`` a bare date means the end of that day, so 'until 2026-05-03' includes it)."""
    if not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{name} {value!r} is not an ISO date like 2026-05-03") from None
    if end and len(text) == 10:
        moment += timedelta(days=1)
    return moment if moment.tzinfo else moment.replace(tzinfo=ZoneInfo(tz or "UTC"))


def format_hits(hits: list[MemoryHit], query: str) -> str:
    """One line per hit: source, date, where to find it, the snippet; a hit whose text came from outside
    (a collector item, a turn logged untrusted, a marked fact or episode) is labelled ``OUTSIDE_LABEL``,
    so the model can weigh it and the bot treats the turn as untrusted."""
    cut = (
        "The search was stopped at its time limit, so more may match: search again with fewer or rarer words."
        if getattr(hits, "partial", False)
        else ""
    )
    if not hits:
        shown = query if len(query) <= 80 else query[:80] + "…"
        return (
            f"No memory matches {shown!r}. The search is by words (with stemming): "
            "try other words, a synonym or a name before concluding it was never said." + (f" {cut}" if cut else "")
        )
    lines = [cut] if cut else []
    for hit in hits:
        date = (hit.time or "")[:10]
        label = f"{OUTSIDE_LABEL} " if is_outside(hit) else ""
        lines.append(f"- [{hit.source}{', ' + date if date else ''}; {hit.path} {hit.ref}] {label}{hit.snippet}")
    return "\n".join(lines)
