"""What a served client may read of the owner's memory and write into it: plain functions over the workspace,
the stores and the MemoryService, each result bounded. The MCP server (mcp_server) offers them as tools.

Reads are the owner's data and the owner's own chats only: a search never returns a guest's chat or another
client's (``owner_conversation`` decides), and nothing here reads ``guests/``. Writes are marked as outside
content with the client's name as their source (``mcp:<name>``): never the owner's own words; each is logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict

from assistant_framework.json_types import JsonObject
from assistant_framework.memory.search import MAX_QUERY_CHARS, MemoryHit
from assistant_framework.stores.facts import FactStore
from assistant_framework.stores.people import ContactStore
from assistant_framework.stores.records import Note, NoteRef, Task
from assistant_framework.stores.tasks import TaskStore
from assistant_framework.stores.texts import NoteStore
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

#: The longest text a write may store (a note's body; a title, a value: one line of it).
MAX_WRITE_CHARS = 20_000
#: Characters of the profile and of the digest given back.
MAX_TEXT_CHARS = 20_000
#: Searches look at this many more hits than they return, so the guests' ones left out do not empty them.
_OVERSAMPLE = 4


class SearchHit(TypedDict):
    """One hit of the ``search`` and ``recall`` tools: where it is, when, whether it came from outside."""

    source: str
    path: str
    ref: str
    date: str | None
    conversation: str | None
    outside: bool
    snippet: str
    score: float


class SearchAnswer(TypedDict, total=False):
    results: list[SearchHit]
    note: str  # why there are none (memory off)


class RecallAnswer(TypedDict):
    block: str  # the recall block the bot would put in the turn
    results: list[SearchHit]


class WriteRefused(Exception):
    """A write by a client that may not write: the sentence says how to allow it."""


@dataclass(frozen=True)
class Caller:
    """Who calls: a configured client, or the owner's own stdio client (``local``)."""

    name: str
    write: bool

    @property
    def source(self) -> str:
        return f"mcp:{self.name}"


@dataclass
class MemoryTools:
    """The owner's memory as a served client sees it."""

    workspace: Workspace
    memory: Any  # MemoryService, or None when memory.enabled is false
    #: True for a conversation id that is one of the owner's own chats (not a guest's, not a client's).
    owner_conversation: Callable[[str], bool]
    #: The owner's home conversation: what ``recall`` recalls for.
    home_conversation: str
    max_results: int = 50
    #: Today's /now digest (the bot side knows how to make it); None: not offered.
    now_digest: Callable[[], str] | None = None
    #: Outside the bot's process (``assistant mcp serve``) nobody else indexes what the bot wrote since:
    #: a search first reads the changed files, at most once in this many seconds (0: before every search).
    refresh_seconds: float | None = None
    _refreshed: float = field(default=float("-inf"), init=False)
    _refresh_lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def _fresh(self) -> None:
        if self.refresh_seconds is None or self.memory is None:
            return
        with self._refresh_lock:
            if time.monotonic() - self._refreshed >= self.refresh_seconds:
                self.memory.refresh()
                self._refreshed = time.monotonic()

    def _limit(self, limit: int | None) -> int:
        return max(1, min(int(limit or 10), self.max_results))

    def _hit(self, hit: MemoryHit) -> SearchHit:
        return {
            "source": hit.source,
            "path": hit.path,
            "ref": hit.ref,
            "date": hit.time,
            "conversation": hit.conversation,
            "outside": hit.outside or hit.source.startswith("collector:"),
            "snippet": hit.snippet,
            "score": round(hit.score, 4),
        }

    def _owners(self, hits: list[MemoryHit]) -> list[MemoryHit]:
        return [hit for hit in hits if hit.conversation is None or self.owner_conversation(hit.conversation)]

    def search(
        self, query: str, limit: int | None = 10, source: str | None = None, since: str = "", until: str = ""
    ) -> SearchAnswer:
        """The bot's hybrid search and ranking over the owner's memory, with provenance and dates."""
        if self.memory is None:
            return {"results": [], "note": "memory is off (memory.enabled)"}
        want = self._limit(limit)
        self._fresh()
        hits = self.memory.search(
            query[:MAX_QUERY_CHARS],
            limit=want * _OVERSAMPLE,
            source=source or None,
            since=_moment(since, "since"),
            until=_moment(until, "until"),
        )
        return {"results": [self._hit(hit) for hit in self._owners(hits)[:want]]}

    def recall(self, message: str) -> RecallAnswer:
        """What the bot would recall for this message in the owner's own chat: the block and its hits."""
        if self.memory is None:
            return {"block": "", "results": []}
        self._fresh()
        hits = self._owners(self.memory.recall(message[:MAX_QUERY_CHARS], self.home_conversation, private=True))
        shown = self.memory.shown_hits(hits)
        return {"block": self.memory.format_recall(hits), "results": [self._hit(hit) for hit in shown]}

    def notes(self, query: str = "") -> JsonObject:
        store = NoteStore(self.workspace)
        found = store.search(query, self.max_results) if query.strip() else store.list()
        return {"notes": found[: self.max_results], "total": len(found)}

    def note(self, name: str) -> Note:
        note = NoteStore(self.workspace).read(name)
        note["body"] = str(note.get("body", ""))[:MAX_TEXT_CHARS]
        return note

    def tasks(self, status: str = "open") -> JsonObject:
        found = TaskStore(self.workspace).list(status or "open")
        return {"tasks": found[-self.max_results :], "total": len(found)}

    def facts(self, subject: str = "", query: str = "") -> JsonObject:
        found = FactStore(self.workspace).lookup(subject=subject or None, query=query or None)
        return {"facts": found[-self.max_results :], "total": len(found)}

    def contacts(self, query: str = "") -> JsonObject:
        store = ContactStore(self.workspace)
        found = store.find(query) if query.strip() else store.all()
        return {"contacts": found[: self.max_results], "total": len(found)}

    def profile(self) -> str:
        if self.memory is None:
            return ""
        return str(self.memory.profile_text(MAX_TEXT_CHARS))

    def now(self) -> str:
        return self.now_digest()[:MAX_TEXT_CHARS] if self.now_digest is not None else ""

    # -- writes ----------------------------------------------------------------------------------------------

    def _may_write(self, caller: Caller, what: str) -> None:
        if not caller.write:
            log.info("serve: %s refused for client %s (read-only)", what, caller.name)
            raise WriteRefused(
                f"{what} refused: the client {caller.name!r} may only read "
                '(set "write": true for it in serve.clients, or start `assistant mcp serve --write`)'
            )

    def note_add(self, caller: Caller, title: str, body: str = "") -> NoteRef:
        self._may_write(caller, "note_add")
        note = NoteStore(self.workspace).add(
            _bounded(title, "title"), _bounded(body, "body"), untrusted=True, source=caller.source
        )
        self._wrote(caller, "note", note["path"])
        return note

    def task_add(self, caller: Caller, title: str, due: str = "", notes: str = "") -> Task:
        self._may_write(caller, "task_add")
        task = TaskStore(self.workspace).add(
            _bounded(title, "title"), due or None, _bounded(notes, "notes"), untrusted=True, source=caller.source
        )
        self._wrote(caller, "task", task["id"])
        return task

    def fact_add(self, caller: Caller, subject: str, attribute: str, value: str) -> JsonObject:
        self._may_write(caller, "fact_add")
        fact, action = FactStore(self.workspace).add(
            _bounded(subject, "subject"),
            _bounded(attribute, "attribute"),
            _bounded(value, "value"),
            source=caller.source,
            untrusted=True,
        )
        self._wrote(caller, "fact", fact["id"])
        return {**fact, "action": action}

    def _wrote(self, caller: Caller, kind: str, ref: str) -> None:
        log.info("serve: client %s wrote %s %s (source %s)", caller.name, kind, ref, caller.source)
        if self.memory is not None:
            self.memory.refresh()  # a search right after finds it


def _bounded(text: str, what: str) -> str:
    text = str(text or "")
    if len(text) > MAX_WRITE_CHARS:
        raise ValueError(f"the {what} is longer than {MAX_WRITE_CHARS} characters")
    return text


def _moment(text: str, what: str) -> datetime | None:
    if not text.strip():
        return None
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{what}: {text[:40]!r} is not a date (YYYY-MM-DD)") from None
