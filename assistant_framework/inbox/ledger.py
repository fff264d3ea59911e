"""The outbound ledger beside a pending item (``<seq>.ledger``): the reply text once produced, the live
message shown while answering, the reply parts already delivered, and the writes its turn makes after the send.

Each change is one record appended as a JSON line (``{"reply": ..., "merged": [...], "keeping": {...}}``,
``{"live": id}``, ``{"parts": {"0": id}}``, ``{"kept": true}``) and the reader folds them in order. Appended
without fsync: it is on the reply path, and a killed process loses nothing (see the package docstring). An
append is one ``write`` to a file opened with ``O_APPEND``, where an atomic rewrite made, wrote, renamed and
replaced a temporary file (about five times the CPU on this machine's ext4, a turn writes two or three). A
record starts with a newline, so one torn by a power loss or a full disk is a line of its own, which the reader
skips (a proper prefix of a JSON object is never one), and the records after it still read. A ledger written
whole by an earlier version (one object, no newline) is the first record.
"""

from __future__ import annotations

import json
import os

from assistant_framework.inbox.item import PENDING_DIR, InboxItem, LedgerFile
from assistant_framework.json_types import JsonObject
from assistant_framework.workspace import Workspace


def ledger_rel(item_id: str) -> str:
    """The item's ledger file under the workspace."""
    return f"{PENDING_DIR}/{item_id}.ledger"


def append_ledger(ws: Workspace, item_id: str, record: LedgerFile) -> None:
    """Append one change to the item's ledger (its folder exists: the item file is in it)."""
    data = ("\n" + json.dumps(record, ensure_ascii=False, separators=(",", ":"))).encode("utf-8")
    # No fsync: see the package docstring (process crashes lose nothing; a power loss may). New files 0600,
    # as every workspace file.
    fd = os.open(ws.path(ledger_rel(item_id)), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        view = memoryview(data)
        while view:  # one write for a record of any sensible size; a short one goes on where it stopped
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def read_ledger(ws: Workspace, item: InboxItem) -> None:
    """Fill the item's reply, live message and parts from its ledger; a missing, emptied or torn record leaves
    what it would have set."""
    try:
        text = ws.read_text(ledger_rel(item.item_id), default="")
    except (ValueError, OSError):
        return  # unreadable (bad bytes): the reply is asked for again
    for line in text.split("\n"):
        try:
            record = json.loads(line) if line.strip() else None
        except ValueError:
            continue  # torn by a power loss or a full disk
        if isinstance(record, dict):
            _fold(item, record)


def _fold(item: InboxItem, record: JsonObject) -> None:
    """One line's changes onto the item (as read: any JSON object, its fields checked here)."""
    try:
        parts = {int(k): int(v) for k, v in (record.get("parts") or {}).items()}
    except (ValueError, TypeError, AttributeError):
        return
    reply = record.get("reply")
    if isinstance(reply, str):
        item.reply = reply
        merged = record.get("merged")
        item.merged = [str(x) for x in merged if isinstance(x, str)] if isinstance(merged, list) else []
    keeping = record.get("keeping")
    if isinstance(keeping, dict):
        item.keeping = keeping
    if record.get("kept") is True:
        item.kept = True
    live = record.get("live")
    if isinstance(live, int) and not isinstance(live, bool):
        item.live = live
    item.parts.update(parts)
