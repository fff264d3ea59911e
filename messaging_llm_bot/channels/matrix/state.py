"""What the Matrix channel keeps between runs, in ``state/matrix/state.json`` (written atomically):

- ``next_batch``: the sync position, written only after the events before it are in the durable inbox, so a
  restart neither answers a message twice nor skips one;
- ``device_id``: the bot's one device (a password login on it adds no new device at each start);
- ``owner_room``: the owner's direct room, where jobs, reminders, notices and the digest go (also noted as
  the owner's chat for the registry: conversation/owner_chats.py, so a served client's search finds it);
- ``told``: rooms told once (an encrypted room; a stranger in a room), so a restart does not say it again.

No access token is kept: the password or the configured token logs in at each start. A damaged file is moved
aside (logged) and the channel starts as on a new workspace: it answers nothing it already answered (the
inbox remembers the event ids it took), and skips what came while it was down.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.matrix.settings import conversation_of
from messaging_llm_bot.conversation.owner_chats import note_owner_chat

log = logging.getLogger(__name__)

STATE_FILE = "state/matrix/state.json"
MAX_TOLD = 10_000  # rooms and people told once; the oldest are forgotten beyond it


@dataclass
class MatrixState:
    next_batch: str | None = None
    device_id: str | None = None
    owner_room: str | None = None
    owner: str | None = None  # whose direct room ``owner_room`` is (None: kept by an older version)
    told: list[str] = field(default_factory=list)


class StateFile:
    """The channel's state file: read at start, written after each change (from any thread)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._lock = threading.Lock()
        self.state = self._read()
        if self.state.owner_room:  # kept before the registry knew it (a workspace of an older version)
            note_owner_chat(workspace, "matrix", conversation_of(self.state.owner_room), self.state.owner)

    def _read(self) -> MatrixState:
        raw = self.workspace.read_state(STATE_FILE, log, "matrix: starting without a sync position")

        def text(key: str) -> str | None:
            value = raw.get(key)
            return value if isinstance(value, str) and value else None

        told = raw.get("told")
        return MatrixState(
            next_batch=text("next_batch"),
            device_id=text("device_id"),
            owner_room=text("owner_room"),
            owner=text("owner"),
            told=[t for t in told if isinstance(t, str)][-MAX_TOLD:] if isinstance(told, list) else [],
        )

    def _write(self) -> None:
        state = self.state
        self.workspace.write_json(
            STATE_FILE,
            {
                "next_batch": state.next_batch,
                "device_id": state.device_id,
                "owner_room": state.owner_room,
                "owner": state.owner,
                "told": state.told[-MAX_TOLD:],
            },
        )

    def update(
        self,
        *,
        next_batch: str | None = None,
        device_id: str | None = None,
        owner_room: str | None = None,
        owner: str | None = None,
    ) -> None:
        """Keep what is given; ``owner_room`` the direct room ``owner`` wrote in."""
        with self._lock:
            changed = False
            fields = (
                ("next_batch", next_batch),
                ("device_id", device_id),
                ("owner_room", owner_room),
                ("owner", owner),
            )
            for name, value in fields:
                if value is not None and getattr(self.state, name) != value:
                    setattr(self.state, name, value)
                    changed = True
            if changed:
                self._write()
            if owner_room is not None:
                note_owner_chat(self.workspace, "matrix", conversation_of(owner_room), owner)

    def owner_room_of(self, owner: str | None) -> str | None:
        """The direct room of ``owner`` (the config's now): None when the one kept is another owner's."""
        state = self.state
        return state.owner_room if owner and state.owner in (None, owner) else None

    def tell_once(self, key: str) -> bool:
        """True the first time ``key`` is asked about (and remembered); False after."""
        with self._lock:
            if key in self.state.told:
                return False
            self.state.told.append(key)
            self._write()
            return True
