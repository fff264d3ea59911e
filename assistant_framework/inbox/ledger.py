"""The outbound ledger beside a pending item (``<seq>.ledger``): the reply text once produced, the live
message shown while answering, and the reply parts already delivered. Written atomically without fsync: it
is on the reply path, and a killed process loses nothing (see the package docstring)."""

from __future__ import annotations

import json

from assistant_framework.inbox.item import PENDING_DIR, InboxItem, LedgerFile
from assistant_framework.workspace import Workspace


def ledger_rel(item_id: str) -> str:
    """The item's ledger file under the workspace."""
    return f"{PENDING_DIR}/{item_id}.ledger"


def write_ledger(ws: Workspace, item: InboxItem) -> None:
    """Write the item's reply, live message and delivered parts to its ledger."""
    # No fsync: see the package docstring (process crashes lose nothing; a power loss may).
    ledger: LedgerFile = {
        "reply": item.reply,
        "live": item.live,
        "parts": {str(k): v for k, v in sorted(item.parts.items())},
        **({"merged": item.merged} if item.merged else {}),
    }
    ws.write_text(ledger_rel(item.item_id), json.dumps(ledger, ensure_ascii=False), durable=False)


def read_ledger(ws: Workspace, item: InboxItem) -> None:
    """Fill the item's reply, live message and parts from its ledger; a missing or torn one leaves them."""
    try:
        ledger = json.loads(ws.read_text(ledger_rel(item.item_id), default="") or "null")
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
    merged = ledger.get("merged")
    if isinstance(ledger.get("reply"), str) and isinstance(merged, list):
        item.merged = [str(x) for x in merged if isinstance(x, str)]
