"""Reminders: ``reminders/reminders.json``, messages the bot sends at a given moment.

A reminder added in a turn with outside content carries ``"untrusted": true`` (see ``provenance``);
delivering or cancelling it keeps the mark.
"""

from __future__ import annotations

import builtins  # the stores have a list() method: their annotations name the type through builtins
from collections.abc import Mapping
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..workspace import Workspace
from ._common import JsonListFile, NotFoundError, iso, now_utc, one_line
from .provenance import mark_record
from .records import Reminder

REMINDERS_FILE = "reminders/reminders.json"


def due_at_of(reminder: Mapping[str, object]) -> datetime | None:
    """The reminder's due moment as an aware datetime, or None if the stored value is unusable.

    A time without a UTC offset (typed by hand) is wall time in the reminder's ``timezone``, as the
    frontends deliver it.
    """
    try:
        moment = datetime.fromisoformat(str(reminder.get("due_at")))
    except ValueError:
        return None
    if moment.tzinfo is None:
        try:
            moment = moment.replace(tzinfo=ZoneInfo(str(reminder.get("timezone"))))
        except (ZoneInfoNotFoundError, ValueError):
            return None
    return moment


class ReminderStore:
    """Pending, delivered, failed and cancelled reminders; survives restarts because it is a file."""

    def __init__(self, workspace: Workspace) -> None:
        # A row typed by hand that is not an object must not stop every other reminder.
        self.file: JsonListFile[Reminder] = JsonListFile(workspace, REMINDERS_FILE)

    def add(
        self,
        chat_id: int | str,
        text: str,
        due_at: datetime,
        timezone: str,
        *,
        untrusted: bool = False,
        conversation_id: str = "",
        once_key: str = "",
    ) -> Reminder:
        """Store a pending reminder; ``due_at`` must be aware, kept with the offset of ``timezone``;
        ``untrusted`` (written from outside content) marks it; ``conversation_id`` is the conversation it was set
        in (a Telegram forum topic's: delivered in that topic), kept when given; ``once_key``: the key of the
        skill's ledger record that added it (``skills/once.py``), kept when given."""
        if due_at.tzinfo is None or due_at.utcoffset() is None:
            raise ValueError(f"reminder due_at {due_at!r} has no timezone")
        text = one_line(text)
        if not text:
            raise ValueError("reminder text is empty")
        local = due_at.astimezone(ZoneInfo(timezone))
        reminder: Reminder = {
            "id": "",
            "chat_id": chat_id,
            "text": text,
            "due_at": iso(local),
            "timezone": timezone,
            "created_at": iso(now_utc()),
            "status": "pending",
            "delivered_at": None,
        }
        if conversation_id:
            reminder["conversation_id"] = conversation_id
        if once_key:
            reminder["once_key"] = once_key
        if untrusted:
            mark_record(reminder)
        with self.file.edit() as rows:
            reminder["id"] = self.file.allocate_id(rows, "r")
            rows.append(reminder)
        return reminder

    def list(self, chat_id: int | str | None = None, status: str | None = None) -> list[Reminder]:
        """Reminders, optionally only one chat's and/or one status, by due time."""
        rows = [
            row
            for row in self.file.load()
            if (chat_id is None or str(row.get("chat_id")) == str(chat_id))
            and (status is None or row.get("status") == status)
        ]
        return sorted(rows, key=_sort_key)

    def pending(self) -> builtins.list[Reminder]:
        """Pending reminders of every chat, earliest first."""
        return self.list(status="pending")

    def due(self, now: datetime) -> builtins.list[Reminder]:
        """Pending reminders whose moment is ``now`` or earlier (``now`` must be aware)."""
        if now.tzinfo is None:
            raise ValueError(f"reminder check time {now!r} has no timezone")
        return [row for row in self.pending() if (moment := due_at_of(row)) is not None and moment <= now]

    def mark_delivered(self, reminder_id: str, at: datetime) -> Reminder:
        """Record delivery (idempotent: an already delivered reminder keeps its first time)."""
        with self.file.edit() as rows:
            reminder = _by_id(rows, reminder_id)
            if reminder.get("status") != "delivered":
                reminder["status"] = "delivered"
                reminder["delivered_at"] = iso(at)
        return reminder

    def mark_failed(self, reminder_id: str, reason: str, at: datetime) -> Reminder:
        """Record that the chat refused the reminder for good (the user blocked the bot, the chat does not
        exist): ``status`` "failed" with ``error`` and ``failed_at``; it is not sent again."""
        with self.file.edit() as rows:
            reminder = _by_id(rows, reminder_id)
            if reminder.get("status") == "pending":
                reminder["status"] = "failed"
                reminder["failed_at"] = iso(at)
                reminder["error"] = one_line(reason)
        return reminder

    def cancel(self, reminder_id: str) -> Reminder:
        """Cancel a pending reminder and return it."""
        with self.file.edit() as rows:
            reminder = _by_id(rows, reminder_id)
            if reminder.get("status") == "pending":
                reminder["status"] = "cancelled"
        return reminder


def _by_id(rows: list[Reminder], reminder_id: str) -> Reminder:
    """The row with this id; of rows sharing it (a line copied by hand), the pending one ``pending()`` lists first."""
    matches = [row for row in rows if str(row.get("id")) == str(reminder_id).strip()]
    if not matches:
        raise NotFoundError(f"no reminder with id {reminder_id!r}")
    pending = [row for row in matches if row.get("status") == "pending"]
    return min(pending, key=_sort_key) if pending else matches[0]


def _sort_key(row: Mapping[str, object]) -> tuple[bool, float, str]:
    moment = due_at_of(row)
    return (moment is None, moment.timestamp() if moment else 0.0, str(row.get("id")))
