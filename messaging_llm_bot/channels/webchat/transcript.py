"""The page's message store (``state/webchat/messages.jsonl``): what the owner and the assistant said on the
page, as a messenger's server keeps a chat. A reload shows it; the ledger's parts are written here once.

Each line is one message: ``id`` (its line number, from 1), ``role`` (``owner``, ``assistant``, ``notice``),
``text``, ``at`` and, for a reply's part, ``key`` (the inbox item) and ``part``: the same part written again
after a crash is found by them and not written twice.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import UTC, datetime
from typing import TypedDict

from assistant_framework.workspace import Workspace, tail_bytes

log = logging.getLogger(__name__)

REL = "state/webchat/messages.jsonl"
#: The most messages a page load shows (the conversation's older days are on the Conversations page).
HISTORY_LIMIT = 200
#: A start reads the store's newest lines only, and the once-map keeps the newest parts' keys: a part written again
#: is one of the turns a restart finishes, the last ones (a start read all of it and kept every key: 10 MB and
#: 18,000 keys after a year of 50 turns a day).
KEYS_KEPT = 2000


class FileRef(TypedDict):
    """A file a message carries: its workspace path (the page serves only files a message names), its name and
    type, and whether the page shows it as a picture."""

    rel: str
    name: str
    mime: str
    photo: bool


class Message(TypedDict, total=False):
    id: int
    role: str
    text: str
    at: str
    key: str
    part: int
    file: FileRef


class Transcript:
    """Append-only, fsynced, one writer per process (a lock); its newest lines read back at start."""

    def __init__(self, workspace: Workspace) -> None:
        self.path = workspace.path(REL)
        self._lock = threading.Lock()
        self._messages: list[Message] = []
        self._parts: dict[tuple[str, int], int] = {}
        self._load()

    def _load(self) -> None:
        for line in tail_bytes(self.path, KEYS_KEPT).splitlines():
            try:
                message: Message = json.loads(line.decode("utf-8"))
                int(message["id"])
            except (ValueError, KeyError, TypeError):
                log.warning("webchat: a damaged line in %s is left out", REL)
                continue
            self._keep(message)

    def _keep(self, message: Message) -> None:
        self._messages.append(message)
        if message.get("key"):
            self._parts[(message.get("key", ""), message.get("part", 0))] = message["id"]
            if len(self._parts) > KEYS_KEPT:
                del self._parts[next(iter(self._parts))]  # the oldest key
        if len(self._messages) > HISTORY_LIMIT:
            del self._messages[0]

    def append(
        self, role: str, text: str, key: str = "", part: int = 0, file: FileRef | None = None
    ) -> tuple[Message, bool]:
        """The message written (True), or the one a ``key`` and ``part`` already wrote (False)."""
        with self._lock:
            if key and (key, part) in self._parts:
                known = self._parts[(key, part)]
                found = next((m for m in self._messages if m["id"] == known), None)
                return (found or Message(id=known, role=role, text=text, at="", key=key, part=part)), False
            last = self._messages[-1]["id"] if self._messages else 0
            message = Message(
                id=last + 1,
                role=role,
                text=text,
                at=datetime.now(UTC).isoformat(timespec="seconds"),
                key=key,
                part=part,
            )
            if file is not None:
                message["file"] = file
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # The owner's words: private whatever the umask (0600), as every file of the workspace.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as out:
                out.write(json.dumps(message, ensure_ascii=False) + "\n")
                out.flush()
                os.fsync(out.fileno())
            self._keep(message)
            return message, True

    def file_of(self, message_id: int) -> FileRef | None:
        """The file a shown message carries, or None (no such message among the recent ones, or no file)."""
        with self._lock:
            found = next((m for m in self._messages if m["id"] == message_id), None)
        return None if found is None else found.get("file")

    def recent(self) -> list[Message]:
        with self._lock:
            return list(self._messages)
