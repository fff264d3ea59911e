"""Durable inbox and outbound ledger: incoming messages survive a crash until their reply is sent.

Layout under the workspace (documented in docs/telegram.md):

- ``state/inbox/pending/<conversation>/<seq>.json``: one file per accepted, unanswered message,
  written atomically and fsynced before the message is processed (the user's message survives a
  power loss once Telegram is told it arrived). It is never rewritten.
- ``state/inbox/pending/<conversation>/<seq>.ledger``: the outbound ledger beside it: the reply
  text once produced, ``live`` (the status/stream message shown while answering) and ``parts``
  (message ids of the reply parts already delivered, by part index). Written atomically without
  fsync, because it is on the reply path: a killed process loses nothing (the page cache survives
  it); after a power loss it may be missing or empty, and then the reply is asked for again and a
  part may be sent twice.
- ``state/inbox/seen.log``: source ids (e.g. Telegram update ids) already accepted, one per line,
  each with the message's fingerprint when known (``77 1/5/1700000000``), so a message delivered
  twice is answered once, also across restarts, while a reused id for another message is not dropped.

``complete`` deletes the pending file, then its ledger. On start-up ``pending()`` lists what a crash left behind,
in arrival order per conversation; an item file that cannot be read is moved aside (``<seq>.json.broken-<time>``,
its ledger too) with one warning. ``live`` is the message shown while the reply was produced
(status line or streamed text), recorded when first sent: a replay finishes that message instead of
sending a second one. No Telegram imports: any frontend can use it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Sequence

from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

PENDING_DIR = "state/inbox/pending"
SEEN_LOG = "state/inbox/seen.log"
#: seen.log is compacted to this many newest ids at start-up, and while running once it holds twice as
#: many (a re-delivery comes soon after the first delivery; old ids never return).
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
    live: int | None = None  # the status/stream message shown while answering; a replay finishes that one
    fingerprint: str = (
        ""  # what the message is (e.g. chat/message id/date): tells a reused source id from a re-delivery
    )

    def to_json(self) -> dict:
        """The on-disk form of the item."""
        return {
            "item_id": self.item_id,
            "source_id": self.source_id,
            "conversation_id": self.conversation_id,
            "seq": self.seq,
            "payload": self.payload,
            "accepted_at": self.accepted_at,
            "parts": {str(k): v for k, v in sorted(self.parts.items())},
            "reply": self.reply,
            "live": self.live,
            "fingerprint": self.fingerprint,
        }

    @classmethod
    def from_json(cls, obj: dict) -> "InboxItem":
        """Rebuild an item from its on-disk form."""
        return cls(
            item_id=str(obj["item_id"]),
            source_id=str(obj["source_id"]),
            conversation_id=str(obj["conversation_id"]),
            seq=int(obj["seq"]),
            payload=dict(obj["payload"]),
            accepted_at=str(obj.get("accepted_at", "")),
            parts={int(k): int(v) for k, v in (obj.get("parts") or {}).items()},
            reply=obj.get("reply") if isinstance(obj.get("reply"), str) else None,
            live=obj["live"] if isinstance(obj.get("live"), int) and not isinstance(obj["live"], bool) else None,
            fingerprint=str(obj.get("fingerprint") or ""),
        )


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
        unlogged = {i.source_id: i.fingerprint for i in self._items.values() if i.source_id not in logged}
        for source_id in sorted(unlogged):
            self.ws.append_line(SEEN_LOG, seen_line(source_id, unlogged[source_id]))
        self._seen: dict[str, str] = {**logged, **unlogged}  # source id -> fingerprint ("" when unknown)

    # -- incoming -------------------------------------------------------------

    def accept(self, source_id: str, conversation_id: str, payload: dict, fingerprint: str = "") -> InboxItem | None:
        """Persist a new message before it is processed; None when ``source_id`` was already accepted.

        With a ``fingerprint`` (what the message is), a known source id whose recorded fingerprint
        differs is a new message under a reused id (the source restarted its id sequence, e.g. another
        Telegram Bot API server): it is accepted, with a warning. A re-delivery has the same fingerprint.
        """
        source_id = str(source_id)
        fingerprint = "".join(str(fingerprint).split())  # one token on its seen.log line
        with self._lock:
            if not self._is_new(source_id, fingerprint):
                return None
            item = self._new_item(source_id, conversation_id, payload, fingerprint)
            self.ws.write_json(self._rel(item.item_id), item.to_json())
            # Seen is recorded after the item: a crash in between still finds the id in the pending file.
            self.ws.append_line(SEEN_LOG, seen_line(source_id, fingerprint))
            self._remember(source_id, fingerprint)
            self._items[item.item_id] = item
            return item

    def accept_many(self, entries: list[tuple]) -> list[InboxItem | None]:
        """``accept`` for a batch of ``(source_id, conversation_id, payload[, fingerprint])``, fsyncs together.

        Every item file is written (atomic rename), then all files and folders are fsynced at once
        (the file system commits concurrent fsyncs together: one journal commit, not two per item),
        and only then are the ids logged as seen. The guarantee is ``accept``'s: when this returns,
        every item is on disk; a crash before that leaves no id logged, so Telegram's re-delivery is
        accepted again (an item file torn by a power loss is skipped as damaged).
        """
        results: list[InboxItem | None] = []
        with self._lock:
            fresh: list[InboxItem] = []
            try:
                for entry in entries:
                    source_id, conversation_id, payload = str(entry[0]), entry[1], entry[2]
                    fingerprint = "".join(str(entry[3] if len(entry) > 3 else "").split())
                    if not self._is_new(source_id, fingerprint, batch=fresh):
                        results.append(None)
                        continue
                    item = self._new_item(source_id, conversation_id, payload, fingerprint)
                    text = json.dumps(item.to_json(), indent=2, ensure_ascii=False) + "\n"
                    self.ws.write_text(self._rel(item.item_id), text, durable=False)
                    fresh.append(item)
                    results.append(item)
                paths = [self.ws.path(self._rel(i.item_id)) for i in fresh]
                _fsync_all(paths + sorted({p.parent for p in paths}))
            except BaseException:
                for item in fresh:  # nothing of a failed batch stays: the caller retries one by one
                    with contextlib.suppress(OSError):
                        self.ws.delete(self._rel(item.item_id))
                raise
            for item in fresh:
                self._items[item.item_id] = item
            for item in fresh:  # a crash before these lines is repaired at the next start (see __init__)
                self.ws.append_line(SEEN_LOG, seen_line(item.source_id, item.fingerprint))
                self._remember(item.source_id, item.fingerprint)
        return results

    def _remember(self, source_id: str, fingerprint: str) -> None:
        """Record an accepted id as the newest; past twice ``SEEN_KEEP`` ids, seen.log is compacted (lock held)."""
        self._seen.pop(source_id, None)  # a reused id moves to the newest end
        self._seen[source_id] = fingerprint
        if len(self._seen) > 2 * SEEN_KEEP:
            self._compact_seen()

    def _compact_seen(self) -> None:
        """Keep the ``SEEN_KEEP`` newest ids (and every pending item's) in memory and in seen.log (lock held).

        Newest by acceptance order, which is the order of seen.log's lines: a re-delivery comes soon
        after the first delivery, so the ids that can still come back are the newest ones."""
        newest = set(list(self._seen)[-SEEN_KEEP:]) | {item.source_id for item in self._items.values()}
        kept = {sid: fp for sid, fp in self._seen.items() if sid in newest}
        self.ws.write_text(SEEN_LOG, "".join(f"{seen_line(sid, fp)}\n" for sid, fp in kept.items()))
        log.info("inbox: %s compacted to the %d newest ids", SEEN_LOG, len(kept))
        self._seen = kept

    def _is_new(self, source_id: str, fingerprint: str, batch: Sequence[InboxItem] = ()) -> bool:
        """False for a re-delivery (also within ``batch``); a reused id for another message is new."""
        if any(item.source_id == source_id for item in batch):
            return False
        known = self._seen.get(source_id)
        if known is None:
            return True
        if not (fingerprint and known and known != fingerprint):
            return False
        log.warning(
            "inbox: source id %s was used before for another message (%s, now %s; highest id seen "
            "%s): the sender restarted its id sequence (a new Bot API server?); answering it as new",
            source_id,
            known,
            fingerprint,
            self._highest_seen(),
        )
        return True

    def _new_item(self, source_id: str, conversation_id: str, payload: dict, fingerprint: str) -> InboxItem:
        # Nanosecond clock keeps arrival order across restarts; max() keeps it strictly increasing.
        seq = max(self._last_seq + 1, time.time_ns())
        self._last_seq = seq
        return InboxItem(
            item_id=f"{conversation_dir(conversation_id)}/{seq:020d}",
            source_id=source_id,
            conversation_id=conversation_id,
            seq=seq,
            payload=payload,
            accepted_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            fingerprint=fingerprint,
        )

    def seen(self, source_id: str) -> bool:
        """True when a message with this source id was accepted before."""
        with self._lock:
            return str(source_id) in self._seen

    def pending(self, prefix: str = "") -> list[InboxItem]:
        """Unanswered items, oldest first (so per conversation they are in arrival order).

        ``prefix`` keeps the conversations of one frontend (``"tg:"``, ``"sig:"``): several
        frontends share one workspace and each replays only its own items.
        """
        with self._lock:
            items = [i for i in self._items.values() if i.conversation_id.startswith(prefix)]
            return sorted(items, key=lambda i: (i.seq, i.item_id))

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

    def record_live(self, item_id: str, message_id: int) -> None:
        """Record the message shown while answering (status or streamed text) as soon as it exists, so a
        replay after a crash edits that message into the reply instead of leaving it and sending another."""
        with self._lock:
            item = self._items.get(item_id)
            if item is None:
                raise KeyError(f"inbox: no pending item {item_id!r} to record a live message for")
            item.live = int(message_id)
            # Within the moment after the send (a kill then would leave the message behind): the
            # ledger is written without fsync, which a killed process survives.
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
        ledger = {"reply": item.reply, "live": item.live, "parts": {str(k): v for k, v in sorted(item.parts.items())}}
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
        live = ledger.get("live")
        if isinstance(live, int) and not isinstance(live, bool):
            item.live = live
        item.parts.update(parts)

    def _load_pending(self) -> list[InboxItem]:
        items = []
        for rel in self.ws.list(f"{PENDING_DIR}/*/*.json"):
            try:
                item = InboxItem.from_json(self.ws.read_json(rel, default=None))
            except (KeyError, TypeError, ValueError, AttributeError) as err:
                self._move_damaged(rel, err)  # a foreign or damaged file: kept for a human, start-up goes on
                continue
            self._read_ledger(item)
            items.append(item)
        known = {self._ledger_rel(i.item_id) for i in items}
        for rel in self.ws.list(f"{PENDING_DIR}/*/*.ledger"):
            if rel not in known:  # its item was completed just before a crash
                self.ws.delete(rel)
        return items

    def _move_damaged(self, rel: str, err: Exception) -> None:
        """Move an item file that cannot be read (and its ledger) aside, beside it, with one warning: the
        message in it is not answered, but the owner can read it, and the next start does not meet it again."""
        ledger = rel.removesuffix(".json") + ".ledger"
        reason = f"{type(err).__name__}: {err}"
        try:
            aside = self.ws.move_aside(rel)
            if self.ws.exists(ledger):
                self.ws.move_aside(ledger)
        except OSError as move_err:
            log.warning(
                "inbox: %s cannot be read (%s) and was left in place: %s; the message in it is not answered",
                rel,
                reason,
                move_err,
            )
            return
        log.warning(
            "inbox: %s cannot be read (%s): moved aside to %s; the message in it is not answered", rel, reason, aside
        )

    def _highest_seen(self) -> str:
        numbers = [int(s) for s in self._seen if s.isdigit()]
        return str(max(numbers)) if numbers else "none"

    def _load_seen(self) -> dict[str, str]:
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
