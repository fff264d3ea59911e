"""One accepted message (``InboxItem``), its on-disk form, and where its file lives."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypedDict

from assistant_framework.json_types import JsonObject

PENDING_DIR = "state/inbox/pending"
#: What the channel keeps of the message to answer it after a restart (Telegram's update, a Signal envelope,
#: a mail's record, a job run's fields): JSON of the channel's own shape, read back only by that channel.
InboxPayload = JsonObject
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class InboxItemFile(TypedDict):
    """An item's file, ``state/inbox/pending/<chat>/<seq>.json`` (written once, with fsync)."""

    item_id: str
    source_id: str
    conversation_id: str
    seq: int
    payload: InboxPayload
    accepted_at: str
    parts: dict[str, int]  # part index -> delivered message id
    reply: str | None
    live: int | None
    fingerprint: str


class LedgerFile(TypedDict, total=False):
    """A record of an item's outbound ledger, ``<seq>.ledger`` beside it: one line each, appended without fsync as
    the reply goes out, holding the fields it changes (inbox/ledger.py)."""

    reply: str | None
    live: int | None
    parts: dict[str, int]
    merged: list[str]  # items of later messages the reply answers too
    keeping: JsonObject  # the writes the reply's turn makes after the send (with the reply)
    kept: bool  # those writes were made


@dataclass
class InboxItem:
    """One accepted message: its ids, payload and the reply parts already sent."""

    item_id: str
    source_id: str
    conversation_id: str
    seq: int
    payload: InboxPayload
    accepted_at: str
    parts: dict[int, int] = field(default_factory=dict)  # part index -> delivered message id
    reply: str | None = None  # the reply text once produced, so a replay resends it instead of asking again
    live: int | None = None  # the status/stream message shown while answering; a replay finishes that one
    fingerprint: str = (
        ""  # what the message is (e.g. chat/message id/date): tells a reused source id from a re-delivery
    )
    #: Items of later messages the recorded reply answers too (they entered this item's turn: busy mode
    #: steer); recorded with the reply, in the same ledger write, so a replay completes them with it.
    merged: list[str] = field(default_factory=list)
    #: The writes the reply's turn makes after the reply was handed on (its history and memory log; the agent's
    #: record, agent/keeping.py), recorded with the reply; ``kept`` once they were made. A replay of an item with
    #: ``keeping`` and not ``kept`` makes them before completing it.
    keeping: JsonObject | None = None
    kept: bool = False
    #: The platform's own record the payload was made from, as the channel received it in this process (Telegram's
    #: ``Update``): its turn reads that instead of decoding the payload again. Never written: None after a restart.
    received: object = field(default=None, compare=False, repr=False)

    def to_json(self) -> InboxItemFile:
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
    def from_json(cls, obj: JsonObject) -> InboxItem:
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


def item_rel(item_id: str) -> str:
    """The item's file under the workspace (``state/inbox/pending/<conversation>/<seq>.json``)."""
    return f"{PENDING_DIR}/{item_id}.json"
