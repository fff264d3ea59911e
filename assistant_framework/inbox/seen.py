"""``state/inbox/seen.log``: the source ids already accepted, so a message delivered twice is answered once.

One line per accepted id, with the message's fingerprint when known (``77 1/5/1700000000``): a re-delivery
has the same fingerprint, a reused id for another message (a source that restarted its id sequence) does
not, and is accepted as new. The log is compacted to the ``SEEN_KEEP`` newest ids at start-up, and while
running once it holds twice as many; damaged lines are moved aside with the file, the readable ids kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from assistant_framework.inbox.item import InboxItem
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

SEEN_LOG = "state/inbox/seen.log"
#: seen.log is compacted to this many newest ids at start-up, and while running once it holds twice as
#: many (a re-delivery comes soon after the first delivery; old ids never return).
SEEN_KEEP = 5000


class SeenIds:
    """The accepted ids, newest last, and their log. Not locked: the inbox calls it under its locks."""

    def __init__(self, workspace: Workspace, pending: Callable[[], Iterable[InboxItem]]) -> None:
        self.ws = workspace
        #: The pending items: their ids survive a compaction whatever their age.
        self._pending = pending
        self._seen: dict[str, str] = self._load()  # source id -> fingerprint ("" when unknown)

    def log_missing(self, items: Iterable[InboxItem]) -> None:
        """Log the ids of pending items that seen.log lacks.

        A crash between writing an item and logging its id leaves the id only in the pending
        file; log it now, or once the item is answered a re-delivery would be taken as new."""
        unlogged = {i.source_id: i.fingerprint for i in items if i.source_id not in self._seen}
        for source_id in sorted(unlogged):
            self.ws.append_line(SEEN_LOG, seen_line(source_id, unlogged[source_id]))
        self._seen.update(unlogged)

    def known(self, source_id: str, fingerprint: str = "") -> bool:
        """True for an accepted id (with ``fingerprint``: one recorded with none or the same)."""
        known = self._seen.get(source_id)
        return known is not None and not (fingerprint and known and known != fingerprint)

    def record(self, source_id: str, fingerprint: str) -> None:
        """Log an accepted id (after its item is on disk) and remember it as the newest."""
        self.ws.append_line(SEEN_LOG, seen_line(source_id, fingerprint))
        self._remember(source_id, fingerprint)

    def _remember(self, source_id: str, fingerprint: str) -> None:
        """Record an accepted id as the newest; past twice ``SEEN_KEEP`` ids, seen.log is compacted."""
        self._seen.pop(source_id, None)  # a reused id moves to the newest end
        self._seen[source_id] = fingerprint
        if len(self._seen) > 2 * SEEN_KEEP:
            self._compact()

    def _compact(self) -> None:
        """Keep the ``SEEN_KEEP`` newest ids (and every pending item's) in memory and in seen.log.

        Newest by acceptance order, which is the order of seen.log's lines: a re-delivery comes soon
        after the first delivery, so the ids that can still come back are the newest ones."""
        newest = set(list(self._seen)[-SEEN_KEEP:]) | {item.source_id for item in self._pending()}
        kept = {sid: fp for sid, fp in self._seen.items() if sid in newest}
        self.ws.write_text(SEEN_LOG, "".join(f"{seen_line(sid, fp)}\n" for sid, fp in kept.items()))
        log.info("inbox: %s compacted to the %d newest ids", SEEN_LOG, len(kept))
        self._seen = kept

    def is_new(self, source_id: str, fingerprint: str, batch: Sequence[InboxItem] = ()) -> bool:
        """False for a re-delivery (also within ``batch``); a reused id for another message is new."""
        if any(item.source_id == source_id for item in batch):
            return False
        if source_id not in self._seen:
            return True
        if self.known(source_id, fingerprint):
            return False
        log.warning(
            "inbox: source id %s was used before for another message (%s, now %s; highest id seen "
            "%s): the sender restarted its id sequence (a new Bot API server?); answering it as new",
            source_id,
            self._seen[source_id],
            fingerprint,
            self._highest(),
        )
        return True

    def _highest(self) -> str:
        numbers = [int(s) for s in self._seen if s.isdigit()]
        return str(max(numbers)) if numbers else "none"

    def _load(self) -> dict[str, str]:
        try:
            data = self.ws.path(SEEN_LOG).read_bytes()
        except FileNotFoundError:
            data = b""
        lines, damaged = seen_lines(data)
        if damaged:
            # Damaged bytes (disk fault, a stray edit): keep the file for a human, go on with the readable ids.
            aside = self.ws.move_aside(SEEN_LOG)
            log.warning(
                "inbox: %s had %d unreadable line(s): moved aside to %s; kept %d readable id(s)",
                SEEN_LOG,
                damaged,
                aside,
                len(lines),
            )
        compact = len(lines) > SEEN_KEEP
        if compact:
            lines = lines[-SEEN_KEEP:]
        if damaged or compact:
            self.ws.write_text(SEEN_LOG, "".join(f"{ln}\n" for ln in lines))
        seen: dict[str, str] = {}
        for line in lines:  # the last line of an id wins (a reused id records its new fingerprint) and is its age
            source_id, _, fingerprint = line.partition(" ")
            seen.pop(source_id, None)
            seen[source_id] = fingerprint.strip()
        return seen


def seen_line(source_id: str, fingerprint: str) -> str:
    """One seen.log line: ``<source id>`` or ``<source id> <fingerprint>``."""
    return f"{source_id} {fingerprint}" if fingerprint else source_id


def seen_lines(data: bytes) -> tuple[list[str], int]:
    """The ids in seen.log's bytes and how many non-blank lines were unreadable (not UTF-8, control bytes)."""
    lines: list[str] = []
    damaged = 0
    for raw in data.splitlines():
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            damaged += 1
            continue
        if not line:
            continue
        if not line.isprintable():
            damaged += 1
            continue
        lines.append(line)
    return lines, damaged
