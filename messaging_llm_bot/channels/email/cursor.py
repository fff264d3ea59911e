"""Where the channel is in its folder: the folder's UIDVALIDITY and the highest UID it has taken
(``state/email/cursor.json``, written atomically after each mail is stored or passed over).

A restart goes on above that UID, so nothing is answered twice (the inbox's seen ids, by Message-ID, catch a
mail taken but not yet passed in the cursor). A changed UIDVALIDITY means the folder was rebuilt and its
UIDs mean nothing: the mail since the day before the last look is read again, and what was taken before is
known by its Message-ID. The first look only notes where the folder is: mail already there is not answered.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

CURSOR_FILE = "state/email/cursor.json"


@dataclass(frozen=True)
class Position:
    folder: str
    uidvalidity: int
    last_uid: int
    checked_at: str  # ISO time of the last look

    def since(self) -> str:
        """The day before the last look in IMAP's SEARCH form (``01-Jan-2026``): a rebuilt folder is read from it."""
        try:
            when = datetime.fromisoformat(self.checked_at)
        except ValueError:
            when = datetime.now(UTC)
        return (when - timedelta(days=1)).strftime("%d-%b-%Y")


class Cursor:
    """The stored position (None before the first look, or for another folder)."""

    def __init__(self, workspace: Workspace, folder: str) -> None:
        self.ws = workspace
        self.folder = folder
        self.position = self._load()

    def _load(self) -> Position | None:
        # Damaged: moved aside, and the next look starts where the folder is.
        data = self.ws.read_state(CURSOR_FILE, log, "email: mail already in the folder is not answered")
        if data.get("folder") != self.folder:
            return None
        try:
            return Position(self.folder, int(data["uidvalidity"]), int(data["last_uid"]), str(data["checked_at"]))
        except (KeyError, TypeError, ValueError):
            return None

    def advance(self, uidvalidity: int, last_uid: int) -> None:
        """Store the new position (atomically) when it moved."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        old = self.position
        if old is not None and (old.uidvalidity, old.last_uid) == (uidvalidity, last_uid):
            return
        self.position = Position(self.folder, uidvalidity, last_uid, now)
        self.ws.write_json(CURSOR_FILE, vars(self.position))
