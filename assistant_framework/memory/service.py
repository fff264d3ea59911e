"""MemoryService: the one object the bot, the skills and the CLI use for long-term memory."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from assistant_framework.json_types import JsonObject

from ..background import BackgroundWorker, InProgress
from ..config.settings import MemorySettings, Settings
from ..config.settings.fields import read_record
from ..stores.facts import FACTS_FILE, FactStore
from ..workspace import Workspace
from . import recall as recall_policy
from .batching import Exchange, IdleBatcher
from .embeddings import Embed, make_similarity
from .episodes import write_settled_episodes
from .extract import extract_batch_and_store
from .index import MemoryIndex
from .journal import ExtractionJournal
from .log import CONVERSATIONS_DIR, TurnLog, safe_conversation_id
from .modelcall import Complete
from .profile import profile_text, refresh_profile_if_due
from .search import MAX_QUERY_CHARS, MAX_SEARCH_SECONDS, MemoryHit, Scope, search
from .sources import HAND_EDITED
from .timeparse import parse_date_range

log = logging.getLogger(__name__)


def memory_enabled(config: Mapping[str, object]) -> bool:
    """``memory.enabled``: whether the bot, the page and the CLI keep the index."""
    return read_record(MemorySettings, config.get("memory")).enabled


#: How many more newest matches per range an explicit search scores than recall does.
SEARCH_CAP_FACTOR = 20

#: Data the built-in skills keep in their own folders; ``skill:notes`` means the ``notes`` source.
BUILTIN_SKILL_SOURCES = frozenset(
    {"notes", "tasks", "facts", "learnings", "contacts", "birthdays", "routines", "reminders"}
)


def source_alias(source: str) -> str:
    """``skill:<name>`` for a built-in skill's data is that data's own source name."""
    kind, _, name = source.partition(":")
    return name if kind == "skill" and name in BUILTIN_SKILL_SOURCES else source


class MemoryService:
    """L0 log, index, recall and the background memory work for one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        config: Settings | Mapping[str, object] | None,
        complete: Complete | None = None,
        embed: Embed | None = None,
        *,
        start_worker: bool = True,
    ) -> None:
        """``config``: the settings records (a loaded config dict is read into them); the ``memory``
        section, ``runtime.timezone`` and the ``llm.embeddings`` model are used."""
        settings = config if isinstance(config, Settings) else Settings.from_config(config or {})
        self.workspace = workspace
        self.tz = ZoneInfo(settings.runtime.timezone)
        self.complete = complete
        self.index = MemoryIndex(workspace)
        self.turns = TurnLog(workspace, self.tz)
        #: How long an explicit search's index queries may take (recall's: MAX_SEARCH_SECONDS, as set).
        self.search_time_limit_seconds = MAX_SEARCH_SECONDS
        self._read(settings.memory)
        # Vectors are cached per model: the embedder's own name wins over the config's.
        self.embed_model = str(getattr(embed, "model", None) or settings.llm.embeddings.model or "default")
        self._similarity = make_similarity(self.index, embed, self.embed_model) if embed else None
        self._recent: dict[str, collections.deque[str]] = {}
        self._recent_lock = threading.Lock()
        self._pending: dict[str, list[str]] = {}  # log file -> turn ids appended, not indexed yet
        self._pending_lock = threading.Lock()
        # Searches in progress: the worker's indexing waits for them (a user waits on a search,
        # nobody on the index being a moment behind).
        self._searches = InProgress()
        #: Tells the owner of a memory file that stops the memory's work (the runtime's notices; None: the log only).
        self.on_problem: Callable[[str], None] | None = None
        self._told: str | None = None  # the problem the owner was last told of (once, again after it was gone)
        self.worker = self._new_worker() if start_worker else None
        # Fact extraction waits until the chat is idle and batches the turns since the last one,
        # so a one-slot local server keeps the chat's prompt cached (see batching.py).
        self.extraction = IdleBatcher(
            self._extract_batch,
            self.worker.submit if self.worker else (lambda job, label: job()),
            idle_seconds=self.settings.extract_idle_seconds,
        )
        # The queue is also on disk, so a stop that does not wait for it loses nothing: what an
        # earlier run left is queued again now (journal.py).
        self.journal = ExtractionJournal(workspace)
        if self.complete is not None and self.worker is not None:
            for exchange in self.journal.load():
                if self._extracts(exchange.conversation_id):
                    self.extraction.add(exchange)
                else:  # the config changed since: extraction is off, or this chat is excluded now
                    self.journal.remove([exchange])
        self._closed = False
        if self.index.moved_aside or self.index.emptied:  # a broken or older index was emptied: refill it now
            if self.worker is not None:
                self.worker.submit(self.refresh, "rebuild the memory index")
            else:
                self.refresh()

    def _new_worker(self) -> BackgroundWorker:
        """The memory thread: the index's refresh every ``refresh_seconds``; its jobs (the turns just logged
        indexed, extraction, episodes) wait for the replies in progress, at most a second, so a turn's two
        lines are indexed in one pass after its reply."""
        return BackgroundWorker(
            "memory", on_idle=self.refresh, idle_seconds=self.settings.refresh_seconds, yield_seconds=1.0
        )

    def configure(self, settings: MemorySettings) -> None:
        """(Re)apply the ``memory`` section: recall, ranking, extraction, episodes, profile, the chats excluded
        or shared, the index's refresh. ``/reload`` calls it; ``memory.enabled`` needs a restart."""
        self._read(settings)
        if self.worker is not None:
            self.worker.idle_seconds = settings.refresh_seconds
        self.extraction.idle_seconds = max(0.0, settings.extract_idle_seconds)

    def _read(self, settings: MemorySettings) -> None:
        self.settings = settings
        self.ranking = settings.ranking
        # Recall runs before every model call and keeps the newest matches only (its budget);
        # an explicit search (skills, CLI) may take longer to reach old matches in long chats.
        self.search_ranking = dataclasses.replace(
            settings.ranking,
            newest_cap=settings.ranking.newest_cap * SEARCH_CAP_FACTOR,
            owner_cap=settings.ranking.owner_cap * SEARCH_CAP_FACTOR,
        )
        self.recall_settings = settings.recall

    # -- L0 ------------------------------------------------------------------

    def log_turn(
        self,
        conversation_id: str,
        role: str,
        text: str,
        *,
        time: datetime | None = None,
        message_id: str | int | None = None,
        meta: JsonObject | None = None,
    ) -> JsonObject:
        """Append a turn to the L0 log (durable at return) and queue its indexing; returns the
        row ({} for excluded chats). ``search`` indexes pending turns first, so it sees them."""
        if recall_policy.is_excluded(conversation_id, self.settings):
            return {}
        rel, row = self.turns.append(conversation_id, role, text, time=time, message_id=message_id, meta=meta)
        self._index_later(rel, row["turn_id"])
        key = safe_conversation_id(conversation_id)
        with self._recent_lock:
            recent = self._recent.setdefault(
                key, collections.deque(maxlen=max(1, self.recall_settings.skip_recent_turns))
            )
            recent.append(row["turn_id"])
        return row

    def _index_later(self, rel: str, turn_id: str) -> None:
        """Index an appended log file in the worker (the index is a cache; a crash before it runs
        is repaired by the next refresh, which reads the file from its last offset)."""
        if self.worker is None:
            self.index.update_file(rel)
            return
        with self._pending_lock:
            first = not self._pending
            self._pending.setdefault(rel, []).append(turn_id)
        if first:
            self.worker.submit(self._index_after_searches, "index logged turns")

    def _index_after_searches(self) -> int:
        """The worker's ``index_pending``, started once no search is running (at most 1 s later):
        a turn's user line is logged just before its recall, and indexing it meanwhile took the
        CPU and the reader connections' page caches from that recall."""
        self._searches.wait_idle(1.0)
        return self.index_pending()

    def _searching_now(self) -> contextlib.AbstractContextManager[None]:
        return self._searches.active()

    def index_pending(self) -> int:
        """Index the log files appended since the last pass; returns how many files."""
        # Under the index lock, so a search waiting on it sees every turn logged before it.
        with self.index.lock:
            with self._pending_lock:
                paths, self._pending = sorted(self._pending), {}
            for rel in paths:
                self.index.update_file(rel)
        return len(paths)

    # -- search and recall ----------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        source: str | None = None,
        conversation: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        within: str | None = None,
        private: bool = True,
        now: datetime | None = None,
    ) -> list[MemoryHit]:
        """Ranked hits. ``within`` applies the recall scope of that conversation (for skills)."""
        if within is not None:
            if recall_policy.is_excluded(within, self.settings):
                return []
            scope = recall_policy.recall_scope(within, self.settings, private)
        else:
            scope = Scope(conversation=conversation)
        if conversation is not None:
            scope.conversation, scope.owner_data = str(conversation), False
        if source:
            scope.sources = (source_alias(source),)
        scope.since, scope.until = since, until
        self.index_pending()
        if scope.owner_data or scope.conversation is None:
            self.index.refresh(HAND_EDITED)  # a note or fact edited by hand a moment ago
        with self._searching_now():
            return search(
                self.index,
                query,
                scope,
                limit,
                self.search_ranking,
                self._similarity,
                self._date_preference(query, since, until, now),
                semantic_weight=self.settings.semantic_weight,
                time_limit_seconds=self.search_time_limit_seconds,
            )

    def _date_preference(
        self, query: str, since: datetime | None, until: datetime | None, now: datetime | None
    ) -> tuple[datetime, datetime] | None:
        """A date phrase in the query prefers rows from then (a soft boost, not a filter:
        people mention an event some days after it happened)."""
        if since is not None or until is not None or self.ranking.time_weight <= 0:
            return None
        found = parse_date_range(query[:MAX_QUERY_CHARS], now or datetime.now(self.tz))  # as the search reads it
        if found is None:
            return None
        grace = max(timedelta(days=7), (found.until - found.since) / 2)
        return found.since, found.until + grace

    def recall(
        self, query: str, conversation_id: str, *, private: bool = True, limit: int | None = None
    ) -> list[MemoryHit]:
        """Hits worth showing the model before it answers, within this conversation's scope."""
        settings = self.recall_settings
        if not settings.enabled or not query.strip() or recall_policy.is_excluded(conversation_id, self.settings):
            return []
        want = limit or settings.limit
        key = safe_conversation_id(conversation_id)
        with self._recent_lock:
            skip = set(self._recent.get(key, ()))
        folder = f"{CONVERSATIONS_DIR}/{key}/"
        with self._pending_lock:
            behind = any(t not in skip for rel, ids in self._pending.items() if rel.startswith(folder) for t in ids)
        if behind:
            # Turns not indexed yet are fine while recall skips them anyway (the newest ones);
            # if the worker fell further behind (e.g. busy with fact extraction), catch up here.
            self.index_pending()
        scope = recall_policy.recall_scope(conversation_id, self.settings, private)
        if scope.owner_data:
            # A fact or note edited by hand since the last turn (or while the bot was down) is recalled as it is
            # now: a stat of each of the owner's files, only the changed ones read (docs/memory.md).
            self.index.refresh(HAND_EDITED)  # before recall
        prefer = self._date_preference(query, None, None, None)
        with self._searching_now():
            found = search(
                self.index,
                query,
                scope,
                want + len(skip),
                self.ranking,
                self._similarity,
                prefer,
                semantic_weight=self.settings.semantic_weight,
            )
        hits = [h for h in found if h.ref not in skip and h.score >= settings.min_score]
        return hits[:want]

    def outside_hits(self, hits: list[MemoryHit]) -> list[MemoryHit]:
        """The hits whose text came from outside (collector items, turns logged as untrusted).

        The index keeps each turn's ``untrusted`` mark, so no log file is read here.
        """
        return [hit for hit in hits if recall_policy.is_outside(hit)]

    def shown_hits(self, hits: list[MemoryHit], budget_chars: int | None = None) -> list[MemoryHit]:
        """The hits ``format_recall`` puts into the block within the same budget (the rest are left out)."""
        budget = budget_chars if budget_chars is not None else self.recall_settings.budget_chars
        return [hit for hit, _ in recall_policy.recall_lines(hits, budget)]

    def format_recall(self, hits: list[MemoryHit], budget_chars: int | None = None) -> str:
        """The marked block for the end of the final user message; '' when no hits."""
        return recall_policy.format_recall(
            hits, budget_chars if budget_chars is not None else self.recall_settings.budget_chars
        )

    # -- index ------------------------------------------------------------------

    def refresh(self) -> None:
        """Incremental index update from the workspace files."""
        self.index.refresh()

    def index_files(self, paths: Sequence[str]) -> int:
        """Index these files now (what a collector run wrote), so a search right after finds them;
        returns how many are memory files. The periodic refresh would find them only up to a minute later."""
        return self.index.index_files(paths)

    def reindex(self) -> int:
        """Rebuild the index from the files; returns the number of entries."""
        return self.index.rebuild()

    # -- background ---------------------------------------------------------------

    def turn_started(self) -> None:
        """The chat began answering a message: background model calls wait (keeps its prefix cached)."""
        self.extraction.turn_started()

    def turn_finished(self) -> None:
        """The chat finished a message (answered or not)."""
        self.extraction.turn_finished()

    def after_turn(
        self,
        conversation_id: str,
        user_text: str,
        reply: str,
        *,
        turn_ids: list[str] | tuple[str, ...] = (),
        untrusted: bool = False,
    ) -> None:
        """Queue fact extraction for the new turns (runs when the chat is idle); returns at once.

        ``untrusted``: outside content entered the turn; its facts are stored marked as such."""
        if self.complete is None or self.worker is None or not self._extracts(conversation_id):
            return
        exchange = Exchange(conversation_id, user_text, reply, list(turn_ids), untrusted=bool(untrusted))
        try:
            self.journal.add(exchange)
        except OSError as exc:  # a full disk: extraction still runs in this run, only a restart would lose it
            log.warning("memory: the extraction queue could not be written (%s)", exc)
        self.extraction.add(exchange)

    def _extracts(self, conversation_id: str) -> bool:
        """Facts are extracted from this chat's turns (the setting is on, the chat not excluded)."""
        return self.settings.extract_facts and not recall_policy.is_excluded(conversation_id, self.settings)

    def _extract_batch(self, conversation_id: str, exchanges: list[Exchange]) -> None:
        # Untrusted exchanges get their own call, so the owner's facts of the same batch stay unmarked.
        # The owner's go first: an outside fact is then added beside them, never replacing them.
        complete = self.complete
        if complete is None:  # the model was taken away (a reload) after the turns were queued
            return
        self._facts_readable()
        for untrusted in (False, True):
            group = [e for e in exchanges if e.untrusted == untrusted]
            if group:
                pairs = [(e.user_text, e.reply) for e in group]
                ids = [i for e in group for i in e.turn_ids]
                stored = extract_batch_and_store(
                    self.workspace, complete, conversation_id, pairs, ids, self.tz, untrusted=untrusted
                )
                self.journal.remove(group)  # stored: not extracted again at the next start
                if stored:  # recalled from the next turn on, not only after the periodic refresh
                    self.index.index_files([FACTS_FILE])

    def _facts_readable(self) -> None:
        """Raise the ValueError of a facts file broken by hand (the batch waits for the fix, extract.py); the owner
        is told once (``on_problem``), not only the log: the chat answers on and nothing else shows it."""
        try:
            FactStore(self.workspace).all()
        except ValueError as exc:
            if str(exc) != self._told and self.on_problem is not None:
                self._told = str(exc)
                self.on_problem(
                    f"{exc}. Nothing in it was changed; no new fact is stored until it is fixed (the messages since "
                    "wait for it). `make doctor` shows where it breaks."
                )
            raise
        self._told = None

    def maintenance(self, now: datetime | None = None) -> None:
        """Write episodes for settled days and refresh the profile when due (runs in the worker)."""
        complete = self.complete
        if complete is None:
            return
        moment = now or datetime.now(self.tz)

        def job() -> None:
            written = write_settled_episodes(self.workspace, complete, self.settings.episodes, moment, self.tz)
            refreshed = refresh_profile_if_due(
                self.workspace, complete, self.settings.profile, moment, force=bool(written)
            )
            if written or refreshed:
                self.index.refresh()

        if self.worker is None:
            job()
        else:
            self.worker.submit(job, "memory maintenance")

    def profile_text(self, budget_chars: int) -> str:
        """profile.md trimmed to whole lines within the budget ('' when absent)."""
        return profile_text(self.workspace, budget_chars)

    def drain(self, timeout: float) -> bool:
        """Run extractions still waiting for idle time, then wait for queued background work;
        False when it did not finish in time."""
        self.extraction.flush()
        return self.worker.drain(timeout) if self.worker else True

    def close(self, wait: float = 5.0) -> None:
        """Stop the background work, waiting at most ``wait`` seconds for a job under way (what it leaves
        in the extraction queue is in the journal, for the next start)."""
        if self._closed:
            return
        self._closed = True
        self.extraction.close()
        if self.worker:
            self.worker.stop(wait)
        self.index.close()
