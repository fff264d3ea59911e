"""The agent: one message in (an ``AgentMessage``), a reply out, skills run in between.

Per conversation, the transaction (build the prompt, run the rounds, commit history) runs
under a FIFO re-entrant lock, so one chat is answered strictly in order and its history never
forks; different chats run in parallel, bounded only by the LLM client's semaphore. Trace
writing (handed to a background thread) and memory upkeep happen after the lock is
released. Nothing raises out of ``handle``: failures become a short reply with ``ok=False``.

The rounds themselves (model request, skill calls, results fed back) are agent/rounds.py;
what the turn takes from memory and gives back is agent/memory.py.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assistant_framework.access import guest_skills
from assistant_framework.background import FOREGROUND
from assistant_framework.config.settings import Settings
from assistant_framework.json_types import JsonObject
from assistant_framework.skills import SkillContext, SkillManager
from assistant_framework.skills.spec import SkillServices
from assistant_framework.traces import TraceStore, after_reply, collect_secrets, new_trace_id
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.choice import ChoiceFormats, skill_choice
from messaging_llm_bot.agent.compaction import Compactor, split_summary
from messaging_llm_bot.agent.guard import CallGate
from messaging_llm_bot.agent.history import (
    HistoryStore,
    history_budget,
    outside_in_history,
    trim_history,
)
from messaging_llm_bot.agent.honesty import honest_reply
from messaging_llm_bot.agent.incoming import AgentMessage, AnswerCallback
from messaging_llm_bot.agent.keeping import KeptTurn, TurnKeeper
from messaging_llm_bot.agent.locks import Conversations
from messaging_llm_bot.agent.memory import Memory, TurnMemory
from messaging_llm_bot.agent.native import SkillFormats
from messaging_llm_bot.agent.outside import TURN, OutsideSource, history_sources
from messaging_llm_bot.agent.prompt import PromptBuilder, final_user_message, section_sizes
from messaging_llm_bot.agent.rounds import Rounds, TurnPrompt, offered_names
from messaging_llm_bot.agent.runner_choice import RunnerChoices
from messaging_llm_bot.agent.session_calls import SessionCalls
from messaging_llm_bot.agent.sessions import Sessions
from messaging_llm_bot.agent.steering import SteerBox, Steered
from messaging_llm_bot.agent.turn import (
    FAILED_TURN_REPLY,
    AgentEvent,
    Emit,
    Hit,
    TurnRecord,
    TurnResult,
    TurnStopped,
    answered,
    format_footer,
    reply_text,
    stopped_reply,
    trace_of,
)
from messaging_llm_bot.llm.client import LLMClient, RunnerConfig
from messaging_llm_bot.llm.slots import background_calls
from messaging_llm_bot.llm.wire import Message

__all__ = ["FAILED_TURN_REPLY", "Agent", "AgentEvent", "AgentMessage", "TurnResult"]

if TYPE_CHECKING:  # pragma: no cover
    from assistant_framework.collectors import CollectorManager

log = logging.getLogger(__name__)


class Agent(SessionCalls):
    """Answers messages with the model and the skills; see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        workspace: Workspace,
        skills: SkillManager,
        llm: LLMClient,
        *,
        collectors: CollectorManager | None = None,
        memory: Memory | None = None,
        clock: Callable[[], datetime] | None = None,
        background_traces: bool = False,
    ) -> None:
        """``settings``: the config's records, built once per load; the loaded config itself reaches the skills'
        context from ``skills`` (``SkillManager.from_config`` keeps it). ``background_traces``: hand traces to the
        trace writer thread instead of writing them before ``handle`` returns; the owner must then call ``drain``
        before it removes or leaves the workspace (the runtime does, at shutdown)."""
        self.workspace = workspace
        self.background_traces = background_traces
        self.llm = llm
        self.memory = memory
        self._turn_memory = TurnMemory(memory, self.now)
        self._clock = clock
        self._conversations = Conversations()
        self._last_recall: dict[str, list[Hit]] = {}
        self._formats = SkillFormats()
        self._choices = ChoiceFormats()
        self.history = HistoryStore(workspace)
        # With the traces in the background, so is the session list's note of an answered message.
        self.sessions = Sessions(workspace, later=after_reply if background_traces else None)
        self.runner_choices = RunnerChoices(workspace)
        self._steer_boxes: dict[str, SteerBox] = {}  # the running turn's box per place (agent/steering.py)
        self._steer_lock = threading.Lock()
        self.skills = skills
        self.collectors = collectors
        self._last_summary: dict[str, str] = {}
        self.compactor = Compactor(
            self.history.summary_head,
            self.history.set_summary,
            self._background_complete,
            idle_seconds=20.0,
            clock=self.now,
        )
        self.keeper = TurnKeeper(
            self.history, self.sessions, self._turn_memory, self.compactor, lambda: self.settings.runtime
        )
        self.configure(settings)

    # -- setup -----------------------------------------------------------------

    def configure(
        self,
        settings: Settings,
        *,
        skills: SkillManager | None = None,
        collectors: CollectorManager | None = None,
        llm: LLMClient | None = None,
    ) -> None:
        """(Re)apply a config's records (built once by the runtime) and optionally new components; the prompt is
        rebuilt on next use."""
        try:
            zone = ZoneInfo(settings.runtime.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"runtime.timezone: unknown IANA time zone {settings.runtime.timezone!r}") from None
        self.settings = settings
        self.policy = settings.policy
        self.zone = zone
        self.skills = skills or self.skills
        self.collectors = collectors if collectors is not None else self.collectors
        self.llm = llm or self.llm
        runner_keys = [r.api_key for r in self.llm.runners]
        self.traces = TraceStore(
            self.workspace, keep=settings.runtime.trace_keep, secrets=collect_secrets(self.config, runner_keys)
        )
        self.gate = CallGate(self.workspace, settings.policy)
        # Summaries of dropped turns wait for the same idle time as fact extraction.
        self.compactor.batcher.idle_seconds = max(0.0, settings.memory.extract_idle_seconds)
        self.prompt = PromptBuilder(
            settings, self.workspace, self.skills, collectors=self.collectors, memory=self.memory
        )

    @property
    def config(self) -> JsonObject:
        """The loaded config the skills were built from (what a turn's skills get in their context)."""
        return self.skills.default_context.config

    def drain(self, timeout: float) -> bool:
        """Wait for queued trace writes (with ``background_traces``) and history summaries (call at shutdown);
        False on timeout."""
        started = time.monotonic()
        traced = self.traces.drain(timeout)
        return self.compactor.drain(max(0.0, timeout - (time.monotonic() - started))) and traced

    def _background_complete(self, messages: list[Message]) -> str:
        """A background model call (a history summary): it yields to every turn's calls (llm/slots.py)."""
        extra = dict(self.llm.settings.background_extra_body) or None
        with background_calls():
            return self.llm.complete(messages, extra=extra).text

    def invalidate_prompt(self) -> None:
        """Forget the cached system prompt (after /reload or a skill change)."""
        self.prompt.invalidate()

    def now(self) -> datetime:
        """The current time in runtime.timezone (from the injected clock when given)."""
        moment = self._clock() if self._clock else datetime.now(self.zone)
        return moment.astimezone(self.zone) if moment.tzinfo else moment.replace(tzinfo=self.zone)

    def pending(self, conversation_id: str) -> int:
        """Messages of a conversation being answered or waiting their turn."""
        return self._conversations.pending(conversation_id)

    # -- public calls ------------------------------------------------------------

    def offered_skills(self, owner_chat: bool) -> list[str]:
        """The skill names a chat's turns offer the model, which its /help, /skills and /skill show too:
        every skill in the owner's own chat, the guest skills (``policy.guest_skills``) anywhere else."""
        return offered_names(self.skills, self._guest_skills(owner_chat))

    def _services(self, message: AgentMessage) -> SkillServices:
        """The helpers a turn's skills get: the memory, the clock, the chat's file sender where it has one."""
        services = SkillServices(clock=self.now)
        if self.memory is not None:
            services["memory"] = self.memory
        if message.send_file:
            services["send_file"] = message.send_file
        return services

    def _guest_skills(self, owner_chat: bool) -> frozenset[str] | None:
        """None (no limit) for the owner's own chat, else the skills a guest turn may see and call."""
        return None if owner_chat else guest_skills(self.policy)

    def stop(self, conversation_id: str, why: str = "") -> bool:
        """Ask the turn running in this conversation to stop; False when none is running. ``why`` is what its
        trace says ("" for the owner's /stop or Ctrl-C: "stopped by the owner").

        It stops at the next safe point: a model call in flight is hung up at once (streamed or not, also
        while the server still reads the prompt; the server stops generating); a skill already running
        finishes, no further one starts. Messages waiting behind it are answered."""
        return self._conversations.stop(conversation_id, why)

    def steer(
        self,
        conversation_id: str,
        text: str,
        user_id: int | str | None,
        message_id: int | str | None = None,
        *,
        interrupt: bool = False,
    ) -> Steered | None:
        """Add a message to the turn running in this conversation (busy mode steer; ``interrupt`` also hangs
        up its model call); None when no turn runs there, the sender is another, or the turn is done (the
        channel then answers it in its own turn). The handle's ``taken`` says, once the turn has ended,
        whether the reply answered it."""
        with self._steer_lock:
            box = self._steer_boxes.get(conversation_id)
        return box.offer(text, user_id, message_id, interrupt) if box is not None else None

    @contextlib.contextmanager
    def _steering(self, place: str, box: SteerBox) -> Iterator[None]:
        with self._steer_lock:
            self._steer_boxes[place] = box
        try:
            yield
        finally:
            box.close()
            with self._steer_lock:
                if self._steer_boxes.get(place) is box:
                    del self._steer_boxes[place]

    def handle(self, message: AgentMessage) -> TurnResult:
        """Answer one message (blocking, thread-safe); never raises for model or skill failures.

        ``message.approve(request) -> bool`` asks the owner to confirm a call the policy marks
        ``ask``; without it such calls are refused.
        """
        with FOREGROUND.active():  # background upkeep (the index, the trace) waits for the reply
            return self._handle(message)

    def _handle(self, message: AgentMessage) -> TurnResult:
        started = time.monotonic()
        emit = _emitter(message.on_event)
        # The chat or topic: its lock orders the turns; the turn itself runs in its active session.
        place = message.conversation_id
        turn = self._new_turn(message, place)
        # Only the sender's own messages in this place may enter the turn meanwhile; a job run takes none.
        turn.steer = steer = SteerBox(message.user_id if message.job is None else None)
        context = self._context(message, turn, place)
        self._turn_memory.signal(started=True)
        self.compactor.turn_started()
        handed: TurnResult | None = None  # the answer handed on before the turn's writes (``on_answer``)
        try:
            with self._conversations.lock(place):
                turn.now = self.now()
                turn.conversation_id = context.conversation_id = self.sessions.active(place)
                # The model calls' counts are written to the spending file once the reply is out (in memory until
                # then, where every cap check sees them).
                with self._counts_after_reply():
                    with self._conversations.running(place, turn.stop), self._steering(place, steer):
                        reply, ok, kept = self._transaction(turn, message, context, emit)
                    if kept is not None and message.on_answer is not None:
                        # The session list first (in memory; its file is written in the background): a /sessions
                        # right after the reply lists this message, as it does not wait for the turn's lock.
                        self.keeper.note_session(kept)
                        handed = self._result(turn, started, reply, ok)
                        # Queued before the reply goes out, as a turn that keeps first queues it before it returns:
                        # a /stats right after the reply reads its usage (the reads wait for queued traces).
                        self._write_trace(turn, handed)
                        self._hand_on(message.on_answer, handed, kept, emit)
                if handed is not None and kept is not None:
                    # Still under the lock: the chat's next turn reads this exchange in the history.
                    self._keep_after_answer(turn, replace(kept, noted=True), message.on_kept)
                elif kept is not None:
                    self.keeper.keep(kept)  # raises: the turn failed, as when the answer failed
        except Exception as exc:  # the last line of defence: the user gets a sentence, the log the traceback
            log.exception("turn %s of conversation %r failed", turn.trace_id, turn.conversation_id)
            turn.error = f"{type(exc).__name__}: {exc}"
            reply, ok = FAILED_TURN_REPLY, False
        if handed is not None:
            return self._after(turn, handed, emit, told=True)  # told and traced
        return self._after(turn, self._result(turn, started, reply, ok), emit)

    def _counts_after_reply(self) -> contextlib.AbstractContextManager[None]:
        spending = self.llm.spending
        return spending.after_reply() if spending is not None else contextlib.nullcontext()

    @staticmethod
    def _hand_on(on_answer: AnswerCallback, result: TurnResult, kept: KeptTurn, emit: Emit) -> None:
        """Tell the answer (as the chat sends it) and its writes' record before the writes are made."""
        emit(AgentEvent("done", {"reply": result.reply}))
        try:
            on_answer(reply_text(result), kept.to_json())
        except Exception:  # the caller's failure: it still gets the answer when the turn returns
            log.exception("turn %s: handing on its answer failed", result.trace_id)

    def _keep_after_answer(self, turn: TurnRecord, kept: KeptTurn, on_kept: Callable[[], None] | None) -> None:
        """The writes of a turn whose answer was handed on (``AgentMessage.on_answer``), ``on_kept`` told at once
        after them (not when they failed: the channel's record of them makes them at the next start)."""
        try:
            self.keeper.keep(kept)
        except Exception as exc:  # the answer is out; the record is kept for the next start
            log.exception("turn %s of conversation %r: its exchange was not kept", turn.trace_id, turn.conversation_id)
            turn.error = f"the exchange was not kept: {type(exc).__name__}: {exc}"
            return
        if on_kept is not None:
            try:
                on_kept()
            except Exception:  # the caller's: at worst the next start makes the writes again (keeping.py)
                log.exception("turn %s: noting its kept exchange failed", turn.trace_id)

    def _result(self, turn: TurnRecord, started: float, reply: str, ok: bool) -> TurnResult:
        elapsed = time.monotonic() - started
        usage = turn.usage()
        return TurnResult(
            reply=reply,
            ok=ok,
            rounds=turn.rounds,
            skill_calls=turn.skill_calls,
            usage=usage,
            elapsed_s=elapsed,
            model_s=turn.model_s(),
            recalled=turn.recalled,
            trace_id=turn.trace_id,
            footer=format_footer(usage, turn.rounds, elapsed, turn.recalled, _answered_by(turn))
            if self.settings.runtime.reply_footer
            else None,
            stopped=turn.stop.is_set() and not ok,
        )

    def _after(self, turn: TurnRecord, result: TurnResult, emit: Emit, *, told: bool = False) -> TurnResult:
        """After the lock: the trace, the files the skills changed indexed, the turn's end told (``told``: the
        answer was handed on, its trace queued then)."""
        if not told:  # a handed-on turn queued its trace before the reply went out
            self._write_trace(turn, result)
        self._turn_memory.index_saved(turn)
        self._turn_memory.signal(started=False)
        self.compactor.turn_finished()
        if not told:
            emit(
                AgentEvent("done", {"reply": result.reply})
                if result.ok
                else AgentEvent("error", {"message": result.reply})
            )
        return result

    # -- the transaction (under the conversation lock) ---------------------------

    def _transaction(
        self, turn: TurnRecord, message: AgentMessage, context: SkillContext, emit: Emit
    ) -> tuple[str, bool, KeptTurn | None]:
        """The turn's reply, whether it answered, and (answered) what it still writes."""
        conversation_id = turn.conversation_id
        # "private": the owner's own words (episodes.guests_day); "untrusted": a recall of it is outside content.
        meta: dict[str, object] = {"private": turn.extract_facts, **({"untrusted": True} if turn.untrusted else {})}
        # The images' files go with both lines: memory search finds a picture by its caption and by what
        # the model said it shows (memory/sources.py, turn_text).
        images = {"images": [image.path for image in message.images]} if message.images else {}
        self._turn_memory.log(turn, "user", turn.text, message_id=message.message_id, meta={**meta, **images})
        recall_block = self._turn_memory.recall(turn, message.owner_chat)
        self._last_recall[turn.place] = turn.recalled
        # The first runner decides the protocol of the turn; a fallback runner gets the same requests.
        # A message with images goes to the runners that take them (llm.vision_runner first). The chat's
        # /model choice is read now, for this turn's every request: a switch applies to the next message.
        prefer = self.chosen_runner(turn.place)
        turn.chosen_runner = prefer
        first = self._first_runner(bool(message.images), prefer)
        two_step = first is not None and skill_choice(first) == "two_step"
        if turn.guest is None:
            system = self.prompt.system_prompt(two_step, turn.limit)
        else:
            system = self.prompt.guest_prompt(turn.guest if turn.limit is None else turn.guest & turn.limit, two_step)
        budget, measure = history_budget(self.settings.runtime)
        history = trim_history(self.history.view(conversation_id), budget, measure=measure)  # read, never changed
        # A forwarded mail two turns ago (or a reply that restated it) is still in the prompt: its
        # text can steer this turn too.
        turn.history_original, turn.history_outside = outside_in_history(history)
        for source in history_sources(history):
            turn.mark_outside(source)
        head = split_summary(history)[0]  # a summary of dropped turns (agent/compaction.py): /why says so
        if head:
            self._last_summary[turn.place] = str(head[0].get("time") or "")
        else:
            self._last_summary.pop(turn.place, None)
        user_message = final_user_message(
            turn.text, turn.now, self.settings.runtime.timezone, recall_block=recall_block, untrusted=turn.guarded
        )
        sizes: dict[str, object] = dict(section_sizes(system, history, user_message))
        if message.images:
            sizes["images"] = [image.size() for image in message.images]
        turn.sizes = sizes
        rounds = Rounds(self.llm, self.skills, self.gate, self.workspace, self.settings, self._formats, prefer=prefer)
        if two_step:
            rounds.choices = self._choices
        try:
            reply, ok = rounds.run(
                turn,
                TurnPrompt(system.text, history, user_message, budget, measure, message.images),
                context,
                emit,
                message.stream,
            )
        except TurnStopped:
            # Not kept in the history: a small model copies a "Stopped." answer it sees there.
            turn.error = turn.stop.why or "stopped by the owner"
            return stopped_reply(turn), False, None
        return self._answered(turn, reply, meta, images) if ok else (reply, ok, None)

    @staticmethod
    def _answered(turn: TurnRecord, reply: str, meta: JsonObject, images: JsonObject) -> tuple[str, bool, KeptTurn]:
        """An answered turn: the reply made honest, and what the turn keeps of the exchange (agent/keeping.py)."""
        reply = honest_reply(reply, turn.saved_to, turn.wrote_memory)
        # Messages that entered the turn meanwhile (busy mode steer) are the user's side of it too.
        steered = [one.text for one in turn.steer.taken()] if turn.steer is not None else []
        # A reply written with outside content in view may restate it: logged (and extracted) as outside.
        reply_meta: JsonObject = {"trace_id": turn.trace_id, **({"untrusted": True} if turn.guarded else {}), **images}
        return reply, True, KeptTurn.of(turn, reply, steered, meta, reply_meta)

    def _new_turn(self, message: AgentMessage, place: str) -> TurnRecord:
        """The record of one message's turn: the outside content it starts with, a guest's skills, its limits."""
        # The injected clock is only consulted inside the guarded block below.
        turn = TurnRecord(
            trace_id=new_trace_id(),
            conversation_id=place,
            text=message.model_text,
            now=datetime.now(self.zone),
            approve=message.approve,
            place=place,
            job=message.job,
        )
        if message.from_outside:
            what = message.outside or "the text of an attachment"
            turn.mark_outside(OutsideSource(f"message:{turn.trace_id}", what, TURN))
        # Not the owner's own chat: only the guest skills, on the chat's own folder (assistant_framework.access).
        turn.guest = self._guest_skills(message.owner_chat)
        # Only the owner's own words become the owner's facts: a guest's or a group's would be stored as theirs.
        turn.extract_facts = message.extract_facts and message.owner_chat
        # A skill whose service the turn lacks (send_file without a chat to send to) is offered nowhere in it.
        turn.unserved = self.skills.unserved(self._services(message).keys())
        turn.limit = message.skills
        if turn.unserved:
            offered = frozenset(self.skills.offered_names()) if message.skills is None else message.skills
            turn.limit = offered - turn.unserved
        return turn

    def _context(self, message: AgentMessage, turn: TurnRecord, place: str) -> SkillContext:
        """What the turn's skills are told about the message, the chat and the bot's services."""
        return SkillContext(
            conversation_id=place,
            place=place,
            chat_id=message.chat_id,
            user_id=message.user_id,
            message_id=message.message_id,
            config=self.config,
            settings=self.settings,
            timezone=self.settings.runtime.timezone,
            services=self._services(message),
            untrusted=turn.untrusted,
            private=message.owner_chat,
        )

    def chosen_runner(self, place: str) -> str | None:
        """The runner a chat or topic chose with /model when the config still has it, else None (the default)."""
        name = self.runner_choices.get(place)
        if name is not None and not any(r.name == name for r in self.llm.runners):
            log.warning("the model runner %r chosen in %r is not configured; the default answers", name, place)
            return None
        return name

    def _first_runner(self, images: bool, prefer: str | None = None) -> RunnerConfig | None:
        """The runner a turn asks first: the chat's choice (``prefer``) when it may answer, else the first
        configured one; the first that takes images for a message with images."""
        names = self.llm.vision_runners if images else tuple(r.name for r in self.llm.runners)
        if prefer in names:
            names = (prefer, *names)
        return next((r for r in self.llm.runners if names and r.name == names[0]), None)

    # -- after the lock ------------------------------------------------------------

    def _write_trace(self, turn: TurnRecord, result: TurnResult) -> None:
        trace = trace_of(turn, result)
        try:
            if self.background_traces:
                # The writer thread logs a failed write; traces queued when the process is
                # killed are lost (diagnostics, not data), and the caller never waits for the disk.
                self.traces.write_later(trace)
            else:
                self.traces.write(trace)
        except Exception:  # a full disk must not cost the user the reply
            log.exception("could not write trace %s", turn.trace_id)
            result.trace_id = None


def _answered_by(turn: TurnRecord) -> str | None:
    """The runner that answered the turn's last request, when the chat chose one with /model (else None: the
    footer stays as it was)."""
    if turn.chosen_runner is None:
        return None
    return next((str(r["runner"]) for r in reversed(turn.requests) if answered(r) and r.get("runner")), None)


def _emitter(on_event: Callable[[AgentEvent], None] | None) -> Emit:
    """Wrap a frontend callback so its failures never break the turn."""

    def emit(event: AgentEvent) -> None:
        if on_event is None:
            return
        try:
            on_event(event)
        except Exception:
            log.exception("event handler failed on %s event", event.kind)

    return emit
