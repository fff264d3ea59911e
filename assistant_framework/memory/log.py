"""L0, the raw log: every turn appended as one JSON line per conversation and day.

Files live at ``conversations/<conversation>/<YYYY-MM-DD>.jsonl``; the conversation id is
made filesystem-safe first. The turn id ``<conversation>:<date>:<n>`` (n = 1-based line
number in the day file) is stable, so the index and recall can point back at the line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from datetime import UTC, datetime, tzinfo

from assistant_framework.json_types import JsonObject

from ..workspace import Workspace

CONVERSATIONS_DIR = "conversations"
ROLES = ("user", "assistant")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.@+=-]+")
MAX_FIRST_LINE_BYTES = 256 * 1024  # a turn's line is read whole up to this (a longer first line: id unknown)


def safe_conversation_id(conversation_id: str | int) -> str:
    """A filesystem-safe, stable folder name for a conversation id (e.g. '-100123' stays)."""
    text = str(conversation_id).strip()
    if not text:
        raise ValueError("conversation id is empty")
    cleaned = _UNSAFE.sub("_", text).strip("._") or "_"
    if cleaned != text or len(cleaned) > 80:
        # Different raw ids could clean to the same name; a short hash keeps them apart.
        digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]
        cleaned = f"{cleaned[:70]}-{digest}"
    return cleaned


def log_path(conversation_id: str | int, day: str) -> str:
    """Workspace-relative path of one conversation's log for one day (YYYY-MM-DD)."""
    return f"{CONVERSATIONS_DIR}/{safe_conversation_id(conversation_id)}/{day}.jsonl"


def logged_conversation_id(workspace: Workspace, folder: str) -> str | None:
    """The conversation id a ``conversations/<folder>/`` log was written for (its first line's), or None: the
    folder name alone is lossy (a hash, a cut), and a served client's search filters by the id."""
    if not folder or "/" in folder or "\\" in folder or folder in (".", ".."):
        return None  # not a folder name the log makes: nothing outside conversations/ is read
    days = sorted(workspace.path(CONVERSATIONS_DIR).joinpath(folder).glob("*.jsonl"))
    for day in days[:1]:
        try:
            with day.open("rb") as file:
                first = json.loads(file.readline(MAX_FIRST_LINE_BYTES) or b"null")
        except (OSError, ValueError):
            return None
        raw = first.get("conversation") if isinstance(first, dict) else None
        if isinstance(raw, str) and raw.strip() and safe_conversation_id(raw) == folder:
            return raw
    return None


def aware(moment: datetime | None, tz: tzinfo | None = None) -> datetime:
    """An aware datetime: now when None, naive values taken as ``tz`` (UTC by default)."""
    if moment is None:
        return datetime.now(tz or UTC)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=tz or UTC)
    return moment


class TurnLog:
    """Appends turns to the L0 log and hands out stable turn ids (thread-safe)."""

    def __init__(self, workspace: Workspace, tz: tzinfo | None = None) -> None:
        self.workspace = workspace
        self.tz = tz
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def append(
        self,
        conversation_id: str | int,
        role: str,
        text: str,
        *,
        time: datetime | None = None,
        message_id: str | int | None = None,
        meta: JsonObject | None = None,
    ) -> tuple[str, JsonObject]:
        """Append one turn; returns (workspace path, row written)."""
        if role not in ROLES:
            raise ValueError(f"turn role {role!r} is not one of {ROLES}")
        moment = aware(time, self.tz)
        day = moment.date().isoformat()
        rel = log_path(conversation_id, day)
        with self._lock:
            n = self._counts.get(rel)
            if _end_torn_line(self.workspace, rel) or n is None:
                n = _count_lines(self.workspace, rel)
            n += 1
            row: JsonObject = {
                "time": moment.isoformat(timespec="seconds"),
                "conversation": str(conversation_id),
                "role": role,
                "text": text,
                "message_id": message_id,
                "turn_id": f"{safe_conversation_id(conversation_id)}:{day}:{n}",
            }
            for key, value in (meta or {}).items():
                row.setdefault(key, value)
            self.workspace.append_jsonl(rel, row)
            self._counts[rel] = n
        return rel, row


def _end_torn_line(workspace: Workspace, rel: str) -> bool:
    """End a last line that has no newline (a crash mid-write, an editor that dropped it), so
    the next turn is not glued onto it and lost with it; True when it did."""
    try:
        with open(workspace.path(rel), "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return False
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return False
    except FileNotFoundError:
        return False
    workspace.append_line(rel, "")
    return True


def _count_lines(workspace: Workspace, rel: str) -> int:
    try:
        with open(workspace.path(rel), "rb") as handle:
            return sum(1 for line in handle if line.strip())
    except FileNotFoundError:
        return 0
