"""Signed-in browser sessions, kept by the server, so that signing out ends a session for good.

A session cookie holds a random id signed with a key derived from the token. Without a list on the
server, a copied cookie stayed valid for its 30 days even after its browser signed out. Here a
cookie counts only while its id is on the list: sign-in adds it, sign-out takes it off, and it falls
off after ``SESSION_DAYS`` or when ``MAX_SESSIONS`` newer ones push it out. The list is
``state/web/sessions.json`` (private, never in a backup: ``state/web/`` is left out) and holds only a
SHA-256 of each id, so reading the file gives no cookie. The page in the bot and ``assistant web``
on the same workspace share it: a change by one is seen by the other at its next request.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable

from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

SESSIONS_FILE = "state/web/sessions.json"
#: How long a session lasts (days); the handlers sign their cookies for as long.
SESSION_DAYS = 30
#: Signed-in browsers at once; a new sign-in past it ends the oldest session.
MAX_SESSIONS = 20


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("ascii", "replace")).hexdigest()


class SessionList:
    """The ids of the signed-in sessions (as digests, with the time each began)."""

    def __init__(self, workspace: Workspace, *, clock: Callable[[], float] = time.time) -> None:
        self.workspace = workspace
        self.clock = clock
        self._lock = threading.Lock()
        self._began: dict[str, float] = {}
        self._seen: tuple[int, int] | None = (-1, -1)

    def active(self, session_id: str | None) -> bool:
        """Whether ``session_id`` is a session signed in and not signed out or expired."""
        if not session_id:
            return False
        with self._lock:
            self._refresh()
            began = self._began.get(_digest(session_id))
        return began is not None and self.clock() - began < SESSION_DAYS * 86400

    def add(self, session_id: str) -> None:
        """Sign a session in (the oldest goes when there are ``MAX_SESSIONS`` already)."""
        with self._lock:
            self._refresh()
            now = self.clock()
            live = {k: v for k, v in self._began.items() if now - v < SESSION_DAYS * 86400}
            live[_digest(session_id)] = now
            newest = sorted(live.items(), key=lambda item: item[1])[-MAX_SESSIONS:]
            self._began = dict(newest)
            self._save()

    def remove(self, session_id: str | None) -> None:
        """Sign a session out: its cookie, wherever a copy of it is, no longer counts."""
        if not session_id:
            return
        with self._lock:
            self._refresh()
            if self._began.pop(_digest(session_id), None) is not None:
                self._save()

    def _version(self) -> tuple[int, int] | None:
        # The file is replaced whole (atomic write): a new inode or time means another page changed it.
        try:
            stat = self.workspace.path(SESSIONS_FILE).stat()
        except OSError:
            return None
        return (stat.st_ino, stat.st_mtime_ns)

    def _refresh(self) -> None:
        version = self._version()
        if version == self._seen:
            return
        self._seen = version
        self._began = {}
        if version is None:
            return
        try:
            data = json.loads(self.workspace.read_text(SESSIONS_FILE, default="{}") or "{}")
        except (OSError, ValueError) as exc:
            # A damaged list signs everyone out (the safe side); the next sign-in writes a good one.
            log.warning("web: %s cannot be read (%s); every browser signs in again", SESSIONS_FILE, exc)
            return
        if isinstance(data, dict):
            self._began = {
                k: float(v)
                for k, v in data.items()
                if isinstance(k, str) and len(k) == 64 and isinstance(v, (int, float)) and not isinstance(v, bool)
            }

    def _save(self) -> None:
        self.workspace.write_text(SESSIONS_FILE, json.dumps(self._began, sort_keys=True) + "\n")
        self._seen = self._version()
