"""Sessions: the conversations of one chat (or forum topic), one of them active; ``/new``, ``/sessions``, ``/resume``.

A frontend names the place a message came from (``tg:7``, ``tg:-1005:12`` for a forum topic,
``signal:+49...``, ``console``); the agent answers it in that place's active session. Session 1
is the place itself (the conversation id every earlier version used, so an existing history is
session 1); session n > 1 is ``<place>#<n>``. Each session has its own history, log and memory
scope, so ``/new`` gives a request without the earlier turns and nothing is deleted: ``/resume``
brings them back, memory search still finds them.

The list lives in ``conversations/<place>/sessions.json`` (beside the place's history); a missing
or unreadable list means session 1 only. The agent's conversation lock of the place orders every
call for it, so no two writers race on the file.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from assistant_framework.memory.log import CONVERSATIONS_DIR, safe_conversation_id
from assistant_framework.workspace import Workspace

#: At most this many sessions are kept in a place's list (the oldest leave the list, not the log).
MAX_SESSIONS = 50
#: /sessions shows this many, newest first.
SHOWN_SESSIONS = 10
#: The first words of a session, as /sessions shows them.
FIRST_WORDS_CHARS = 60


@dataclass
class Session:
    """One conversation of a place: its number, its conversation id and what /sessions shows of it."""

    number: int
    conversation_id: str
    started: str | None = None  # ISO time of its first answered message
    last: str | None = None  # ISO time of its latest answered message
    first: str = ""  # the first words of its first message
    messages: int = 0  # answered messages


def session_id(place: str, number: int) -> str:
    """The conversation id of a place's session ``number`` (session 1 is the place itself)."""
    return place if number == 1 else f"{place}#{number}"


def first_words(text: str) -> str:
    """The start of a message on one line, as /sessions shows it."""
    line = " ".join(str(text).split())
    return line if len(line) <= FIRST_WORDS_CHARS else line[: FIRST_WORDS_CHARS - 1] + "…"


def _copies(sessions: list[Session]) -> list[Session]:
    """Copies of ``sessions`` (their fields are numbers and strings: a shallow copy is a whole one). ``asdict``'s
    deep copies cost 5 µs a session, three lists of up to 50 a turn."""
    return [replace(s) for s in sessions]


class Sessions:
    """The session lists of every place in a workspace (thread-safe; the agent's lock orders one place).

    ``later(job, label)``: where an answered message's note (``touch``) is written, after the reply is out (the
    agent's trace writer, ``traces.after_reply``); the list in memory changes at once. Without it it is written
    before ``touch`` returns. A rewrite on the reply's path waited for the file system's journal: about 4 ms a
    turn of wall time, 15 ms and more at the 99th percentile, on this project's loaded test disk."""

    def __init__(
        self, workspace: Workspace, *, later: Callable[[Callable[[], object], str], None] | None = None
    ) -> None:
        self.workspace = workspace
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[int, list[Session]]] = {}
        self._later = later
        self._queued: set[str] = set()  # places whose list waits for ``later`` to write it
        # One file write at a time, with the list it came from: a queued note never writes over a newer list.
        self._writing = threading.Lock()

    def _file(self, place: str) -> str:
        return f"{CONVERSATIONS_DIR}/{safe_conversation_id(place)}/sessions.json"

    def _read(self, place: str) -> tuple[int, list[Session]]:
        with self._lock:
            cached = self._cache.get(place)
        if cached is not None:
            return cached[0], _copies(cached[1])
        try:
            data = self.workspace.read_json(self._file(place), default=None)
        except (ValueError, UnicodeDecodeError, OSError):
            data = None  # a broken list: session 1 only, rewritten at the next change
        sessions: list[Session] = []
        active = 1
        if isinstance(data, dict) and isinstance(data.get("sessions"), list):
            for row in data["sessions"][-MAX_SESSIONS:]:
                if not isinstance(row, dict) or not isinstance(row.get("number"), int) or row["number"] < 1:
                    continue
                sessions.append(
                    Session(
                        number=row["number"],
                        conversation_id=session_id(place, row["number"]),
                        started=row.get("started") if isinstance(row.get("started"), str) else None,
                        last=row.get("last") if isinstance(row.get("last"), str) else None,
                        first=str(row.get("first") or "")[:FIRST_WORDS_CHARS],
                        messages=count if isinstance(count := row.get("messages"), int) else 0,
                    )
                )
            if isinstance(data.get("active"), int) and any(s.number == data["active"] for s in sessions):
                active = data["active"]
        if not sessions:
            sessions = [Session(1, place)]
        with self._lock:
            self._cache[place] = (active, _copies(sessions))
        return active, sessions

    def _write(self, place: str, active: int, sessions: list[Session], durable: bool = True) -> None:
        sessions = sorted(sessions, key=lambda s: s.number)[-MAX_SESSIONS:]
        if not any(s.number == active for s in sessions):
            active = sessions[-1].number
        with self._writing:
            self._store(place, active, sessions, durable)
            with self._lock:
                self._cache[place] = (active, _copies(sessions))

    def _store(self, place: str, active: int, sessions: list[Session], durable: bool) -> None:
        # A session a line, each by the C encoder (indented, Python's own encoder took 0.2 ms for 50 sessions).
        rows = ",\n".join(json.dumps({k: v for k, v in vars(s).items() if k != "conversation_id"}) for s in sessions)
        self.workspace.write_text(
            self._file(place), f'{{"active": {json.dumps(active)}, "sessions": [\n{rows}\n]}}\n', durable=durable
        )

    def _write_noted(self, place: str) -> None:
        """``later``'s job: the place's list as it is now in memory, to its file (no fsync)."""
        with self._writing:
            with self._lock:
                self._queued.discard(place)
                cached = self._cache.get(place)
            if cached is not None:
                self._store(place, cached[0], cached[1], durable=False)

    def active(self, place: str) -> str:
        """The conversation id of the place's active session."""
        number, _ = self._read(place)
        return session_id(place, number)

    def active_number(self, place: str) -> int:
        """The number of the place's active session."""
        return self._read(place)[0]

    def list(self, place: str) -> list[Session]:
        """The place's sessions, oldest first."""
        return sorted(self._read(place)[1], key=lambda s: s.number)

    def touch(self, place: str, conversation_id: str, when: datetime, text: str) -> None:
        """Note an answered message of the session ``conversation_id`` of ``place``."""
        active, sessions = self._read(place)
        stamp = when.isoformat(timespec="seconds")
        session = next((s for s in sessions if s.conversation_id == conversation_id), None)
        if session is None:
            return  # the session left the list meanwhile: its history still works
        if session.started is None:
            session.started, session.first = stamp, first_words(text)
        session.last = stamp
        session.messages += 1
        # No fsync: what /sessions shows of a session; the active session (new, resume) is written durably.
        if self._later is None:
            self._write(place, active, sessions, durable=False)
            return
        sessions = sorted(sessions, key=lambda s: s.number)[-MAX_SESSIONS:]
        with self._lock:
            self._cache[place] = (active, _copies(sessions))
            if place in self._queued:
                return  # the queued write takes this note too
            self._queued.add(place)
        self._later(lambda: self._write_noted(place), f"the session list of {place}")

    def new(self, place: str, *, current_empty: bool) -> tuple[Session, bool]:
        """Start a new session and make it active: (it, True); ``current_empty`` (the active session has no
        history yet): the active one stays, (it, False)."""
        active, sessions = self._read(place)
        current = next((s for s in sessions if s.number == active), None)
        if current is not None and current_empty:
            return current, False
        number = max((s.number for s in sessions), default=0) + 1
        session = Session(number, session_id(place, number))
        self._write(place, number, [*sessions, session])
        return session, True

    def resume(self, place: str, number: int) -> Session | None:
        """Make session ``number`` the active one; None when the place has no such session."""
        _, sessions = self._read(place)
        session = next((s for s in sessions if s.number == number), None)
        if session is None:
            return None  # not a session of this place: the active one stays
        self._write(place, number, sessions)
        return session

    def forget_cache(self, place: str) -> None:
        """Read the list from its file again at the next use (after it was edited by hand)."""
        with self._lock:
            self._cache.pop(place, None)
