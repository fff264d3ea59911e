"""The durable inbox (``Inbox``): accepting messages, the pending items a crash leaves behind, their
ledgers, and completing them. The layout is in the package docstring."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from assistant_framework.inbox.fsync import fsync_all
from assistant_framework.inbox.item import PENDING_DIR, InboxItem, InboxPayload, LedgerFile, conversation_dir, item_rel
from assistant_framework.inbox.ledger import append_ledger, ledger_rel, read_ledger
from assistant_framework.inbox.seen import SeenIds
from assistant_framework.json_types import JsonObject
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)


#: One message for ``accept_many``: (source_id, conversation_id, payload[, fingerprint]).
AcceptEntry = tuple[str, str, InboxPayload] | tuple[str, str, InboxPayload, str]


class AcceptBusy(Exception):
    """``accept(wait=False)`` found another acceptance under way (its fsync may take a while): nothing was done."""


class Inbox:
    """Durable inbox + outbound ledger in a workspace; thread-safe within one process.

    Two locks: ``_accepting`` orders the acceptances (the seen ids, the sequence, the item written and fsynced),
    ``_lock`` guards the pending items and their ledgers and is held only for a moment, never across an fsync: a
    ledger write or a completion made in the event loop (conversation/turn.py) does not wait for a message
    being stored meanwhile. An acceptance takes ``_lock`` inside ``_accepting`` (to add its item), never the
    other way round."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self._accepting = threading.Lock()
        self._lock = threading.Lock()
        self._last_seq = 0
        self._items: dict[str, InboxItem] = {}
        # Accepted with ``synced=False`` and not yet fsynced (``sync_accepted``) nor completed: their ids are not
        # logged as seen yet (a power loss may take the file and leave the line), ``seen`` knows them meanwhile.
        self._unsynced: dict[str, InboxItem] = {}
        for item in self._load_pending():
            self._items[item.item_id] = item
            self._last_seq = max(self._last_seq, item.seq)
        self._left_seq = self._last_seq  # the items found here were left by an earlier run; later ones get more
        # The seen ids change only under both locks (``_remember``), so either lock reads them safely; their
        # compaction lists the pending items, under ``_lock``.
        self._seen = SeenIds(workspace, pending=lambda: self._items.values())
        self._seen.log_missing(self._items.values())

    def left_by_earlier_run(self, item: InboxItem) -> bool:
        """Whether ``item`` was pending when this inbox was opened (an earlier process took it and did not finish
        it), not accepted since."""
        return 0 < item.seq <= self._left_seq

    # -- incoming -------------------------------------------------------------

    def accept(
        self,
        source_id: str,
        conversation_id: str,
        payload: InboxPayload,
        fingerprint: str = "",
        *,
        synced: bool = True,
        wait: bool = True,
    ) -> InboxItem | None:
        """Persist a new message before it is processed; None when ``source_id`` was already accepted.

        With a ``fingerprint`` (what the message is), a known source id whose recorded fingerprint
        differs is a new message under a reused id (the source restarted its id sequence, e.g. another
        Telegram Bot API server): it is accepted, with a warning. A re-delivery has the same fingerprint.
        ``synced=False``: as ``accept_many``'s. ``wait=False``: ``AcceptBusy`` rather than a wait for another
        acceptance (an event loop must not wait out its fsync).
        """
        # The batch's way with one entry: the file written (atomic rename), then it and its folder fsynced
        # together, one journal commit (fsync, rename, fsync one after the other waited for two, on the turn's
        # path before its model call); seen is recorded after that.
        return self.accept_many([(source_id, conversation_id, payload, fingerprint)], synced=synced, wait=wait)[0]

    def accept_many(
        self, entries: Sequence[AcceptEntry], *, synced: bool = True, wait: bool = True
    ) -> list[InboxItem | None]:
        """``accept`` for a batch of ``(source_id, conversation_id, payload[, fingerprint])``, fsyncs together.

        Every item file is written (atomic rename), then all files and folders are fsynced at once
        (the file system commits concurrent fsyncs together: one journal commit, not two per item),
        and only then are the ids logged as seen. The guarantee is ``accept``'s: when this returns,
        every item is on disk; a crash before that leaves no id logged, so Telegram's re-delivery is
        accepted again (an item file torn by a power loss is skipped as damaged).

        ``synced=False``: the files are written (a killed process loses nothing) but neither fsynced nor their ids
        logged: ``sync_accepted`` does both later, and the platform is told they came only after it (Telegram's
        next getUpdates offset), so the turn runs while the disk commits. Completing one logs its id first.
        """
        results: list[InboxItem | None] = []
        with self._acceptance(wait):
            fresh: list[InboxItem] = []
            try:
                for entry in entries:
                    source_id, conversation_id, payload = str(entry[0]), entry[1], entry[2]
                    fingerprint = "".join(str(entry[3] if len(entry) > 3 else "").split())
                    if not self._seen.is_new(source_id, fingerprint, batch=[*fresh, *self._unsynced.values()]):
                        results.append(None)
                        continue
                    item = self._new_item(source_id, conversation_id, payload, fingerprint)
                    # One line: the C encoder (indented, Python's own encoder took 0.09 ms a message before its turn).
                    text = json.dumps(item.to_json(), ensure_ascii=False) + "\n"
                    self.ws.write_text(item_rel(item.item_id), text, durable=False)
                    fresh.append(item)
                    results.append(item)
                if synced and fresh:
                    self._fsync(fresh)
            except BaseException:
                for item in fresh:  # nothing of a failed batch stays: the caller retries one by one
                    with contextlib.suppress(OSError):
                        self.ws.delete(item_rel(item.item_id))
                raise
            with self._lock:
                for item in fresh:
                    self._items[item.item_id] = item
                    if not synced:
                        self._unsynced[item.item_id] = item
                if synced:
                    for item in fresh:  # a crash before these lines is repaired at the next start (see __init__)
                        self._seen.record(item.source_id, item.fingerprint)
        return results

    @contextlib.contextmanager
    def _acceptance(self, wait: bool) -> Iterator[None]:
        """``_accepting`` held; without ``wait``, ``AcceptBusy`` when another acceptance holds it."""
        if not self._accepting.acquire(blocking=wait):
            raise AcceptBusy("another message is being stored")
        try:
            yield
        finally:
            self._accepting.release()

    def note(self, source_id: str, fingerprint: str = "") -> bool:
        """Remember a message handled at once without an item (a command answered, a question's answer, a button
        pressed), so the same delivery again is known to ``seen``: False when it was (``accept``'s test, so with
        a ``fingerprint`` another message under a reused id is new), True when it is noted now."""
        source_id, fingerprint = str(source_id), "".join(str(fingerprint).split())
        with self._accepting, self._lock:
            if not self._seen.is_new(source_id, fingerprint, batch=list(self._unsynced.values())):
                return False
            self._seen.record(source_id, fingerprint)
            return True

    @property
    def unsynced(self) -> bool:
        """True while something ``accept_many(synced=False)`` wrote waits for ``sync_accepted``."""
        return bool(self._unsynced)

    def sync_accepted(self) -> bool:
        """fsync what ``accept_many(synced=False)`` wrote and is still pending (files and folders together), then
        log those ids as seen; False when there was nothing to sync. Raises OSError (they stay to sync again)."""
        with self._accepting:
            with self._lock:
                waiting = list(self._unsynced.values())
            if not waiting:
                return False
            self._fsync(waiting, missing_ok=True)  # completed meanwhile: gone, nothing to keep
            with self._lock:
                for item in waiting:
                    if self._unsynced.pop(item.item_id, None) is not None:
                        self._seen.record(item.source_id, item.fingerprint)
        return True

    def _fsync(self, items: list[InboxItem], missing_ok: bool = False) -> None:
        paths = [self.ws.path(item_rel(i.item_id)) for i in items]
        fsync_all(paths + sorted({p.parent for p in paths}), missing_ok=missing_ok)

    def _new_item(self, source_id: str, conversation_id: str, payload: InboxPayload, fingerprint: str) -> InboxItem:
        # Nanosecond clock keeps arrival order across restarts; max() keeps it strictly increasing.
        seq = max(self._last_seq + 1, time.time_ns())
        self._last_seq = seq
        return InboxItem(
            item_id=f"{conversation_dir(conversation_id)}/{seq:020d}",
            source_id=source_id,
            conversation_id=conversation_id,
            seq=seq,
            payload=payload,
            accepted_at=datetime.now(UTC).isoformat(timespec="seconds"),
            fingerprint=fingerprint,
        )

    def seen(self, source_id: str, fingerprint: str = "") -> bool:
        """True when a message with this source id was accepted before (with a ``fingerprint``: this same message,
        not another one under a reused id, which ``accept`` takes as new)."""
        source_id, fingerprint = str(source_id), "".join(str(fingerprint).split())
        with self._lock:
            if any(i.source_id == source_id and i.fingerprint == fingerprint for i in self._unsynced.values()):
                return True
            return self._seen.known(source_id, fingerprint)

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

    def record_reply(
        self, item_id: str, reply: str, merged: list[str] | None = None, keeping: JsonObject | None = None
    ) -> None:
        """Persist the reply text before sending it, so a crash mid-delivery resumes the same reply; ``merged``:
        the pending items whose messages this reply answers too (one write: a replay completes them with it);
        ``keeping``: the writes its turn makes after the send (``InboxItem.keeping``), in the same write."""
        with self._lock:
            item = self._items.get(item_id)
            if item is None:
                raise KeyError(f"inbox: no pending item {item_id!r} to record a reply for")
            item.reply = reply
            item.merged = list(merged or [])
            record: LedgerFile = {"reply": reply}
            if item.merged:
                record["merged"] = item.merged
            if keeping is not None:
                item.keeping = record["keeping"] = keeping
            append_ledger(self.ws, item_id, record)

    def record_kept(self, item_id: str) -> None:
        """Note that the writes of the item's turn after its send were made (``InboxItem.kept``)."""
        with self._lock:
            item = self._items.get(item_id)
            if item is None:
                raise KeyError(f"inbox: no pending item {item_id!r} to record its turn's writes for")
            item.kept = True
            append_ledger(self.ws, item_id, {"kept": True})

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
            append_ledger(self.ws, item_id, {"live": item.live})

    def record_part(self, item_id: str, index: int, message_id: int) -> None:
        """Record that reply part ``index`` of an item was delivered as ``message_id``."""
        with self._lock:
            item = self._items.get(item_id)
            if item is None:
                raise KeyError(f"inbox: no pending item {item_id!r} to record part {index} for")
            item.parts[int(index)] = int(message_id)
            append_ledger(self.ws, item_id, {"parts": {str(int(index)): int(message_id)}})

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
            unsynced = self._unsynced.pop(item_id, None)
            if unsynced is not None:  # answered before its fsync: a restart must not answer its re-delivery again
                self._seen.record(unsynced.source_id, unsynced.fingerprint)
            self.ws.delete(item_rel(item_id))
            self.ws.delete(ledger_rel(item_id))

    # -- internals ------------------------------------------------------------

    def _load_pending(self) -> list[InboxItem]:
        items = []
        for rel in self.ws.list(f"{PENDING_DIR}/*/*.json"):
            try:
                item = InboxItem.from_json(self.ws.read_json(rel, default=None))
            except (KeyError, TypeError, ValueError, AttributeError) as err:
                self._move_damaged(rel, err)  # a foreign or damaged file: kept for a human, start-up goes on
                continue
            read_ledger(self.ws, item)
            items.append(item)
        known = {ledger_rel(i.item_id) for i in items}
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
