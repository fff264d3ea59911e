"""What the agent uses of long-term memory, and how a turn uses it without ever failing for it.

``Memory`` is the seam: the calls the agent and its prompt make (``MemoryService`` in
assistant_framework/memory has them all). ``TurnMemory`` makes them for one agent: the turn's
lines logged, recall placed in the prompt, the idle signals for background work, and the facts
queued after the answer. Memory is an aid: each call that fails is logged and the turn goes on
without it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from assistant_framework.json_types import JsonObject
from assistant_framework.skills.spec import MemorySearch
from messaging_llm_bot.agent.outside import RECALL, OutsideSource
from messaging_llm_bot.agent.turn import TurnRecord, hit_dict

if TYPE_CHECKING:  # pragma: no cover - the memory package loads with the memory service
    from assistant_framework.memory import MemoryHit

log = logging.getLogger(__name__)


class Memory(MemorySearch, Protocol):
    """The memory calls the agent makes (``assistant_framework.memory.MemoryService``)."""

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
        """Append one line to the turn log; returns its row (with ``turn_id``), {} when not logged."""
        ...

    def recall(
        self, query: str, conversation_id: str, *, private: bool = True, limit: int | None = None
    ) -> list[MemoryHit]:
        """Hits worth showing the model before it answers, within the conversation's scope."""
        ...

    def format_recall(self, hits: list[MemoryHit], budget_chars: int | None = None) -> str:
        """The marked block for the end of the user's message."""
        ...

    def outside_hits(self, hits: list[MemoryHit]) -> list[MemoryHit]:
        """The hits whose text came from outside."""
        ...

    def shown_hits(self, hits: list[MemoryHit], budget_chars: int | None = None) -> list[MemoryHit]:
        """The hits ``format_recall`` puts into the block (the budget leaves the rest out)."""
        ...

    def turn_started(self) -> None:
        """A chat began answering: background model calls wait."""
        ...

    def turn_finished(self) -> None:
        """A chat finished answering (answered or not)."""
        ...

    def after_turn(
        self,
        conversation_id: str,
        user_text: str,
        reply: str,
        *,
        turn_ids: list[str] | tuple[str, ...] = (),
        untrusted: bool = False,
    ) -> None:
        """Queue fact extraction for an answered turn; returns at once."""
        ...

    def profile_text(self, budget_chars: int) -> str:
        """The owner's profile for the system prompt, within the budget."""
        ...

    def index_files(self, paths: Sequence[str]) -> int:
        """Bring these workspace files into the search index now; returns how many memory indexes."""
        ...


class TurnMemory:
    """One agent's use of memory in its turns (no memory: every call does nothing)."""

    def __init__(self, memory: Memory | None, clock: Callable[[], datetime]) -> None:
        self.memory = memory
        self.clock = clock  # the time a line is logged at (asked only when a line is logged)

    def log(self, turn: TurnRecord, role: str, text: str, *, message_id: int | str | None, meta: JsonObject) -> None:
        """Log one line of the turn; its id goes to the turn (for the facts taken from it)."""
        turn_id = self.log_line(turn.conversation_id, role, text, message_id=message_id, meta=meta)
        if turn_id:
            turn.log_ids.append(turn_id)

    def log_line(
        self, conversation_id: str, role: str, text: str, *, message_id: int | str | None, meta: JsonObject
    ) -> str | None:
        """Log one line of a conversation; its id (None: not logged)."""
        if self.memory is None:
            return None
        try:
            record = self.memory.log_turn(
                conversation_id, role, text, time=self.clock(), message_id=message_id, meta=meta
            )
        except Exception:  # losing one log line is bad; losing the answer too would be worse
            log.exception("memory log of a %s turn failed in conversation %r", role, conversation_id)
            return None
        turn_id = (record or {}).get("turn_id")
        return str(turn_id) if turn_id else None

    def recall(self, turn: TurnRecord, private: bool) -> str:
        """The recall block for the turn's prompt ('' for none); recalled outside content marks the turn."""
        if self.memory is None:
            return ""
        try:
            hits = self.memory.recall(turn.text, turn.conversation_id, private=private)
            block = self.memory.format_recall(hits) if hits else ""
            # Only what the block shows is in the turn's context: a hit the budget left out is not.
            outside = self.memory.outside_hits(self.memory.shown_hits(hits)) if block else []
        except Exception:  # recall is an aid: answer without it rather than not at all
            log.exception("memory recall failed for conversation %r; answering without it", turn.conversation_id)
            return ""
        turn.recalled = [hit_dict(h) for h in hits]
        for hit in outside:
            # Recalled feed items, mails or forwarded text are outside content, as if a skill had read them.
            date = f", {hit.time[:10]}" if hit.time else ""
            turn.mark_outside(OutsideSource(f"recall:{hit.path}#{hit.ref}", f"{hit.source}{date}", RECALL))
        return block

    def signal(self, started: bool) -> None:
        """Tell the memory service a turn started or finished (its background calls wait for idle)."""
        if self.memory is None:
            return
        try:
            self.memory.turn_started() if started else self.memory.turn_finished()
        except Exception:  # bookkeeping must never cost the user the reply
            log.exception("memory %s signal failed", "turn_started" if started else "turn_finished")

    def index_saved(self, turn: TurnRecord) -> None:
        """The files the turn's skills changed are searchable as they are now from the next turn on: "remember
        ...", /new and the question came before the index's periodic refresh, which waits for a minute without
        background work (and a fact forgotten was still recalled). Not for a turn that keeps its memory apart (a
        served client's: its skills write elsewhere)."""
        if self.memory is None or not turn.touched or not turn.extract_facts:
            return
        try:
            self.memory.index_files(turn.touched)
        except Exception:  # the periodic refresh picks them up later; the answer must not wait for it
            log.exception("memory: indexing %s after turn %s failed", turn.touched, turn.trace_id)

    def take_facts(self, conversation_id: str, text: str, reply: str, log_ids: list[str], guarded: bool) -> None:
        """Queue the facts of an answered exchange (a ``guarded`` turn's are stored marked: outside text never
        becomes an owner fact)."""
        if self.memory is None:
            return
        try:
            self.memory.after_turn(conversation_id, text, reply, turn_ids=tuple(log_ids), untrusted=guarded)
        except Exception:
            log.exception("memory upkeep after an answered turn of %r failed", conversation_id)
