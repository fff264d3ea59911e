"""The fact-extraction queue on disk: exchanges waiting for extraction survive a restart.

``IdleBatcher`` keeps its queue in memory and extraction waits for an idle chat, so a bot that stops
(the terminal chat's /quit, which does not wait for it) would otherwise lose the exchanges not yet
extracted. Each one is written here when queued and removed once its batch is stored; the next start
reads the file back and queues them again. The file is replaced atomically under the workspace's
lock for it, and bounded: the newest ``MAX_ENTRIES`` exchanges, each text cut at ``MAX_TEXT_CHARS``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from typing import TypedDict

from assistant_framework.workspace import Workspace

from .batching import Exchange

log = logging.getLogger(__name__)

JOURNAL_PATH = "state/memory_extraction_queue.json"
MAX_ENTRIES = 50  # as IdleBatcher's max_pending: what the queue would drop, the journal drops too
MAX_TEXT_CHARS = 32_000


class JournalEntry(TypedDict):
    id: str
    conversation_id: str
    user_text: str
    reply: str
    turn_ids: list[str]
    untrusted: bool


class ExtractionJournal:
    """``state/memory_extraction_queue.json``: the exchanges queued for fact extraction, not stored yet."""

    def __init__(self, workspace: Workspace, rel: str = JOURNAL_PATH, max_entries: int = MAX_ENTRIES) -> None:
        self.workspace = workspace
        self.rel = rel
        self.max_entries = max(1, max_entries)

    def add(self, exchange: Exchange) -> None:
        """Write ``exchange`` (given a ``journal_id`` here) before it is queued; the oldest beyond the bound go."""
        exchange.journal_id = exchange.journal_id or uuid.uuid4().hex
        entry = JournalEntry(
            id=exchange.journal_id,
            conversation_id=exchange.conversation_id,
            user_text=exchange.user_text[:MAX_TEXT_CHARS],
            reply=exchange.reply[:MAX_TEXT_CHARS],
            turn_ids=list(exchange.turn_ids),
            untrusted=bool(exchange.untrusted),
        )
        with self.workspace.lock(self.rel):
            entries = [e for e in self._read() if e["id"] != entry["id"]]
            entries.append(entry)
            self._write(entries[-self.max_entries :])

    def remove(self, exchanges: Iterable[Exchange]) -> None:
        """Forget exchanges whose facts are stored (or that were dropped)."""
        ids = {e.journal_id for e in exchanges if e.journal_id}
        if not ids:
            return
        with self.workspace.lock(self.rel):
            entries = self._read()
            kept = [e for e in entries if e["id"] not in ids]
            if len(kept) != len(entries):
                self._write(kept)

    def load(self) -> list[Exchange]:
        """The exchanges left by an earlier run, oldest first."""
        with self.workspace.lock(self.rel):
            entries = self._read()
        return [
            Exchange(
                e["conversation_id"],
                e["user_text"],
                e["reply"],
                list(e["turn_ids"]),
                untrusted=e["untrusted"],
                journal_id=e["id"],
            )
            for e in entries
        ]

    def _read(self) -> list[JournalEntry]:
        try:
            data = self.workspace.read_json(self.rel, default={"exchanges": []})
        except (ValueError, OSError) as exc:  # damaged by hand or by a disk: keep it for a human, start afresh
            aside = self.workspace.move_aside(self.rel)
            log.warning("%s; moved aside to %s, its exchanges are not extracted", exc, aside)
            return []
        rows = data.get("exchanges") if isinstance(data, dict) else None
        return [entry for row in rows or [] if (entry := _valid(row)) is not None]

    def _write(self, entries: list[JournalEntry]) -> None:
        if entries:
            self.workspace.write_json(self.rel, {"exchanges": entries})
        else:
            self.workspace.delete(self.rel)


def _valid(row: object) -> JournalEntry | None:
    """One well-formed entry, or None (a row edited by hand into something else is skipped)."""
    if not isinstance(row, dict):
        return None
    texts = [row.get(k) for k in ("id", "conversation_id", "user_text", "reply")]
    turn_ids = row.get("turn_ids", [])
    if not all(isinstance(t, str) for t in texts) or not isinstance(turn_ids, list):
        return None
    return JournalEntry(
        id=row["id"],
        conversation_id=row["conversation_id"],
        user_text=row["user_text"],
        reply=row["reply"],
        turn_ids=[str(t) for t in turn_ids],
        untrusted=bool(row.get("untrusted", False)),
    )
