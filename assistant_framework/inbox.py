"""Durable inbox and outbound ledger: incoming messages survive a crash until their reply is sent.

Layout under the workspace (documented in docs/telegram.md):

- ``state/inbox/pending/<conversation>/<seq>.json``: one file per accepted, unanswered message,
  written atomically and fsynced before the message is processed (the user's message survives a
  power loss once Telegram is told it arrived).
- ``state/inbox/pending/<conversation>/<seq>.ledger``: the outbound ledger beside it: the reply
  text once produced and ``parts`` (message ids of the reply parts already delivered, by part
  index). Written atomically without fsync, because it is on the reply path: a killed process
  loses nothing (the page cache survives it); after a power loss it may be missing or empty, and
  then the reply is asked for again and a part may be sent twice. The message file is never
  rewritten, so it cannot be torn by that.
- ``state/inbox/seen.log``: source ids (e.g. Telegram update ids) already accepted, one per line,
  so a message delivered twice is answered once, also across restarts.

``complete`` deletes the pending file, then its ledger. On start-up ``pending()`` lists what a crash left behind,
in arrival order per conversation. No Telegram imports: any frontend can use it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from assistant_framework.workspace import Workspace

PENDING_DIR = "state/inbox/pending"
SEEN_LOG = "state/inbox/seen.log"
#: seen.log is compacted to this many newest ids at start-up (update ids only grow, old ones never return).
SEEN_KEEP = 5000
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass
class InboxItem:
    """One accepted message: its ids, payload and the reply parts already sent."""

    item_id: str
    source_id: str
    conversation_id: str
    seq: int
    payload: dict
    accepted_at: str
    parts: dict[int, int] = field(default_factory=dict)  # part index -> delivered message id
    reply: str | None = None  # the reply text once produced, so a replay resends it instead of asking again

    def to_json(self) -> dict:
        """The on-disk form of the item."""
        return {"item_id": self.item_id, "source_id": self.source_id, "conversation_id": self.conversation_id,
                "seq": self.seq, "payload": self.payload, "accepted_at": self.accepted_at,
                "parts": {str(k): v for k, v in sorted(self.parts.items())}, "reply": self.reply}

    @classmethod
    def from_json(cls, obj: dict) -> "InboxItem":
        """Rebuild an item from its on-disk form."""
        return cls(item_id=str(obj["item_id"]), source_id=str(obj["source_id"]),
                   conversation_id=str(obj["conversation_id"]), seq=int(obj["seq"]), payload=dict(obj["payload"]),
                   accepted_at=str(obj.get("accepted_at", "")),
                   parts={int(k): int(v) for k, v in (obj.get("parts") or {}).items()},
                   reply=obj.get("reply") if isinstance(obj.get("reply"), str) else None)


def conversation_dir(conversation_id: str) -> str:
    """A file-name-safe folder name for a conversation id (``tg:-100`` -> ``tg_-100``)."""
    safe = _SAFE.sub("_", conversation_id).strip(".") or "_"
    return safe[:120]


class Inbox:
    """Durable inbox + outbound ledger in a workspace; thread-safe within one process."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self._lock = threading.Lock()
        self._last_seq = 0
        self._items: dict[str, InboxItem] = {}
        for item in self._load_pending():
            self._items[item.item_id] = item
            self._last_seq = max(self._last_seq, item.seq)
        logged = self._load_seen()
        # A crash between writing an item and logging its id leaves the id only in the pending
        # file; log it now, or once the item is answered a re-delivery would be taken as new.
        for source_id in sorted({i.source_id for i in self._items.values()} - logged):
            self.ws.append_line(SEEN_LOG, source_id)
        self._seen: set[str] = logged | {i.source_id for i in self._items.values()}

    # -- incoming -------------------------------------------------------------

    def accept(self, source_id: str, conversation_id: str, payload: dict) -> InboxItem | None:
        """Persist a new message before it is processed; None when ``source_id`` was already accepted."""
        source_id = str(source_id)
        with self._lock:
            if source_id in self._seen:
                return None
            # Nanosecond clock keeps arrival order across restarts; max() keeps it strictly increasing.
            seq = max(self._last_seq + 1, time.time_ns())
            self._last_seq = seq
            item = InboxItem(item_id=f"{conversation_dir(conversation_id)}/{seq:020d}", source_id=source_id,
                             conversation_id=conversation_id, seq=seq, payload=payload,
                             accepted_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
            self.ws.write_json(self._rel(item.item_id), item.to_json())
            # Seen is recorded after the item: a crash in between still finds the id in the pending file.
            self.ws.append_line(SEEN_LOG, source_id)
            self._seen.add(source_id)
            self._items[item.item_id] = item
            return item

    def accept_many(self, entries: list[tuple[str, str, dict]]) -> list[InboxItem | None]:
        """``accept`` for a batch of (source_id, conversation_id, payload), with the fsyncs together.

        Every item file is written (atomic rename), then all files and folders are fsynced at once
        (the file system commits concurrent fsyncs together: one journal commit, not two per item),
        and only then are the ids logged as seen. The guarantee is ``accept``'s: when this returns,
        every item is on disk; a crash before that leaves no id logged, so Telegram's re-delivery is
        accepted again (an item file torn by a power loss is skipped as damaged).
        """
        results: list[InboxItem | None] = []
        with self._lock:
            fresh: list[InboxItem] = []
            batch: set[str] = set()
            try:
                self._write_batch(entries, fresh, batch, results)
                paths = [self.ws.path(self._rel(i.item_id)) for i in fresh]
                _fsync_all(paths + sorted({p.parent for p in paths}))
            except BaseException:
                for item in fresh:  # nothing of a failed batch stays: the caller retries one by one
                    with contextlib.suppress(OSError):
                        self.ws.delete(self._rel(item.item_id))
                raise
            for item in fresh:
                self._seen.add(item.source_id)
                self._items[item.item_id] = item
            for item in fresh:  # a crash before these lines is repaired at the next start (see __init__)
                self.ws.append_line(SEEN_LOG, item.source_id)
        return results

    def _write_batch(self, entries: list[tuple[str, str, dict]], fresh: list[InboxItem], batch: set[str],
                     results: list[InboxItem | None]) -> None:
        for source_id, conversation_id, payload in entries:
            source_id = str(source_id)
            if source_id in self._seen or source_id in batch:
                results.append(None)
                continue
            batch.add(source_id)
            seq = max(self._last_seq + 1, time.time_ns())
            self._last_seq = seq
            item = InboxItem(item_id=f"{conversation_dir(conversation_id)}/{seq:020d}", source_id=source_id,
                             conversation_id=conversation_id, seq=seq, payload=payload,
                             accepted_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
            text = json.dumps(item.to_json(), indent=2, ensure_ascii=False) + "\n"
            self.ws.write_text(self._rel(item.item_id), text, durable=False)
            fresh.append(item)
            results.append(item)

    def seen(self, source_id: str) -> bool:
        """True when a message with this source id was accepted before."""
        with self._lock:
            return str(source_id) in self._seen

    def pending(self) -> list[InboxItem]:
        """Unanswered items, oldest first (so per conversation they are in arrival order)."""
        with self._lock:
            return sorted(self._items.values(), key=lambda i: (i.seq, i.item_id))

    def get(self, item_id: str) -> InboxItem | None:
        """The pending item with this id, or None when unknown or completed."""
        with self._lock:
            return self._items.get(item_id)

    # -- outbound ledger ------------------------------------------------------

    def record_reply(self, item_id: str, reply: str) -> None:
        """Persist the reply text before sending it, so a crash mid-delivery resumes the same reply."""
        with self._lock:
            item = self._items.get(item_id)
            if item is None:
                raise KeyError(f"inbox: no pending item {item_id!r} to record a reply for")
            item.reply = reply
            self._write_ledger(item)

    def record_part(self, item_id: str, index: int, message_id: int) -> None:
        """Record that reply part ``index`` of an item was delivered as ``message_id``."""
        with self._lock:
            item = self._items.get(item_id)
            if item is None:
                raise KeyError(f"inbox: no pending item {item_id!r} to record part {index} for")
            item.parts[int(index)] = int(message_id)
            self._write_ledger(item)

    def parts_sent(self, item_id: str) -> int:
        """How many leading reply parts (0, 1, ... without gaps) were already delivered."""
        with self._lock:
            item = self._items.get(item_id)
            if item is None:
                return 0
            count = 0
            while count in item.parts:
                count += 1
            return count

    def complete(self, item_id: str) -> None:
        """Mark an item answered: its pending file is removed; unknown ids are ignored."""
        with self._lock:
            self._items.pop(item_id, None)
            self.ws.delete(self._rel(item_id))
            self.ws.delete(self._ledger_rel(item_id))

    # -- internals ------------------------------------------------------------

    @staticmethod
    def _rel(item_id: str) -> str:
        return f"{PENDING_DIR}/{item_id}.json"

    @staticmethod
    def _ledger_rel(item_id: str) -> str:
        return f"{PENDING_DIR}/{item_id}.ledger"

    def _write_ledger(self, item: InboxItem) -> None:
        # No fsync: see the module docstring (process crashes lose nothing; a power loss may).
        ledger = {"reply": item.reply, "parts": {str(k): v for k, v in sorted(item.parts.items())}}
        self.ws.write_text(self._ledger_rel(item.item_id), json.dumps(ledger, ensure_ascii=False), durable=False)

    def _read_ledger(self, item: InboxItem) -> None:
        try:
            ledger = json.loads(self.ws.read_text(self._ledger_rel(item.item_id), default="") or "null")
            if not isinstance(ledger, dict):
                return  # none, or emptied by a power loss: the reply is asked for again
            parts = {int(k): int(v) for k, v in (ledger.get("parts") or {}).items()}
        except (ValueError, TypeError, AttributeError, OSError):
            return
        if isinstance(ledger.get("reply"), str):
            item.reply = ledger["reply"]
        item.parts.update(parts)

    def _load_pending(self) -> list[InboxItem]:
        items = []
        for rel in self.ws.list(f"{PENDING_DIR}/*/*.json"):
            try:
                item = InboxItem.from_json(self.ws.read_json(rel, default=None))
            except (KeyError, TypeError, ValueError, AttributeError):
                continue  # a foreign or damaged file: leave it for a human, do not crash start-up
            self._read_ledger(item)
            items.append(item)
        known = {self._ledger_rel(i.item_id) for i in items}
        for rel in self.ws.list(f"{PENDING_DIR}/*/*.ledger"):
            if rel not in known:  # its item was completed just before a crash
                self.ws.delete(rel)
        return items

    def _load_seen(self) -> set[str]:
        lines = [ln.strip() for ln in self.ws.read_text(SEEN_LOG, default="").splitlines() if ln.strip()]
        if len(lines) > SEEN_KEEP:
            lines = lines[-SEEN_KEEP:]
            self.ws.write_text(SEEN_LOG, "\n".join(lines) + "\n")
        return set(lines)


def _fsync_all(paths: list) -> None:
    """fsync files and folders concurrently (one journal commit for the lot on ext4/xfs)."""
    if not paths:
        return
    if len(paths) == 1:
        _fsync_path(paths[0])
        return
    with ThreadPoolExecutor(min(16, len(paths)), thread_name_prefix="inbox-fsync") as pool:
        for _ in pool.map(_fsync_path, paths):
            pass


def _fsync_path(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
