"""What an answered turn leaves behind: the exchange in the history, the memory log and the session list.

A chat's turn hands its answer on before these writes (``AgentMessage.on_answer``): the user waits for the send,
not for the history's file, the log's append and its fsync (about 2 ms of a 15 ms turn). The writes still run
under the conversation's lock, so the chat's next turn reads this one's history. The channel records the
``KeptTurn`` with the reply in the inbox's ledger (the write it makes anyway) and notes when the writes ended; a
kill between the send and that note leaves the record, and the next start makes the writes from it
(``TurnKeeper.keep``) before the message is completed. A kill in the moment between the writes and the note
writes the exchange twice, as a kill between the writes and the reply's record asks the model again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime

from assistant_framework.config.settings import RuntimeSettings
from assistant_framework.json_types import JsonObject
from messaging_llm_bot.agent.compaction import Compactor
from messaging_llm_bot.agent.history import HistoryStore, history_budget
from messaging_llm_bot.agent.memory import TurnMemory
from messaging_llm_bot.agent.outside import stored_sources
from messaging_llm_bot.agent.sessions import Sessions
from messaging_llm_bot.agent.settings import history_budget_chars
from messaging_llm_bot.agent.turn import TurnRecord
from messaging_llm_bot.llm.wire import Message

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeptTurn:
    """The writes of one answered turn, as the ledger keeps them until they are made (JSON both ways)."""

    conversation_id: str  # the session whose history and log take the exchange
    place: str  # the chat or topic (the session list)
    text: str  # the message's own text, as the model read it
    steered: list[str]  # messages that entered the turn meanwhile (busy mode steer): the user's side too
    reply: str
    when: str  # the turn's time (ISO): the history's stamp and the session list's
    untrusted: bool  # outside content entered the turn itself: both messages kept marked
    derived: bool  # the turn ran with outside content in view: the reply kept marked
    outside: list[dict[str, str]]  # the outside content's keys and labels, on each marked message
    user_meta: JsonObject  # the memory log's fields of a steered line
    reply_meta: JsonObject  # the memory log's fields of the reply's line
    log_ids: list[str]  # the memory log's lines of the turn so far (the facts are taken from them)
    facts: bool  # facts may be taken from the exchange
    guarded: bool  # facts taken are stored marked
    noted: bool = False  # the session list has the message already (``TurnKeeper.note_session``)

    def to_json(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> KeptTurn | None:
        """The record as the ledger read it back; None when it is not one (an edited or torn ledger)."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(**data)
        except TypeError:
            return None

    @classmethod
    def of(
        cls, turn: TurnRecord, reply: str, steered: list[str], user_meta: JsonObject, reply_meta: JsonObject
    ) -> KeptTurn:
        """What ``turn`` (answered with ``reply``) still writes."""
        return cls(
            conversation_id=turn.conversation_id,
            place=turn.place,
            text=turn.text,
            steered=steered,
            reply=reply,
            when=turn.now.isoformat(),
            untrusted=turn.read_outside,
            derived=turn.history_original or turn.untrusted,
            outside=stored_sources(turn.outside.values()),
            user_meta=user_meta,
            reply_meta=reply_meta,
            log_ids=list(turn.log_ids),
            facts=turn.extract_facts,
            guarded=turn.guarded,
        )


class TurnKeeper:
    """Makes a ``KeptTurn``'s writes: the same for a turn that just answered and for a record a kill left."""

    def __init__(
        self,
        history: HistoryStore,
        sessions: Sessions,
        memory: TurnMemory,
        compactor: Compactor,
        runtime_settings: Callable[[], RuntimeSettings],
    ) -> None:
        self.history = history
        self.sessions = sessions
        self.memory = memory
        self.compactor = compactor
        self._runtime = runtime_settings

    def keep(self, kept: KeptTurn, *, again: bool = False) -> None:
        """The history first (it raises: a turn that cannot keep its exchange says so), then the log lines, the
        session list and the facts (each logs its own failure). ``again``: a record a kill left, whose exchange
        may be in the history already (the kill came after that write): not added twice."""
        runtime = self._runtime()
        budget, measure = history_budget(runtime)
        user_text = "\n\n".join([kept.text, *kept.steered])
        when = datetime.fromisoformat(kept.when)
        if again and self._in_history(kept.conversation_id, user_text, kept.reply, when):
            log.info("the exchange of %r at %s is in its history already", kept.conversation_id, kept.when)
        else:
            self._append(kept, user_text, when, budget, measure, runtime)
        log_ids = list(kept.log_ids)
        for text in kept.steered:
            self._log(log_ids, kept, "user", text, kept.user_meta)
        # A reply written with outside content in view may restate it: logged (and extracted) as outside.
        self._log(log_ids, kept, "assistant", kept.reply, kept.reply_meta)
        if not kept.noted:
            self.note_session(kept)
        if kept.facts:
            self.memory.take_facts(kept.conversation_id, kept.text, kept.reply, log_ids, kept.guarded)

    def note_session(self, kept: KeptTurn) -> None:
        """Note the answered message in the session list (/sessions); a failed write costs only the listing."""
        try:
            self.sessions.touch(kept.place, kept.conversation_id, datetime.fromisoformat(kept.when), kept.text)
        except OSError as err:
            log.warning("could not note the message in the session list of %r: %s", kept.place, err)

    def _in_history(self, conversation_id: str, user_text: str, reply: str, when: datetime) -> bool:
        stamp = when.isoformat(timespec="seconds")
        tail = self.history.load(conversation_id)[-2:]
        return [(m.get("content"), m.get("time")) for m in tail] == [(user_text, stamp), (reply, stamp)]

    def _append(
        self,
        kept: KeptTurn,
        user_text: str,
        when: datetime,
        budget: int,
        measure: Callable[[Message], int],
        runtime: RuntimeSettings,
    ) -> None:
        self.history.append_pair(
            kept.conversation_id,
            user_text,
            kept.reply,
            budget_chars=budget,
            when=when,
            # The message or a call's result is kept marked; memory recalled into the turn is not in
            # the history, only the reply written beside it (derived, one generation).
            untrusted=kept.untrusted,
            derived=kept.derived,
            outside=kept.outside,
            measure=measure,
            on_drop=lambda dropped: self.compactor.dropped(
                kept.conversation_id, dropped, history_budget_chars(runtime)
            ),
        )

    def _log(self, log_ids: list[str], kept: KeptTurn, role: str, text: str, meta: JsonObject) -> None:
        turn_id = self.memory.log_line(kept.conversation_id, role, text, message_id=None, meta=meta)
        if turn_id:
            log_ids.append(turn_id)
