"""The agent loop: one user message in, a reply out, skills run in between.

Per conversation, the transaction (build the prompt, run the skill loop, commit history) runs
under a FIFO re-entrant lock, so one chat is answered strictly in order and its history never
forks; different chats run in parallel, bounded only by the LLM client's semaphore. Trace
writing (handed to a background thread) and memory upkeep happen after the lock is
released. Nothing raises out of ``handle_message``: failures become a short reply with
``ok=False``.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assistant_framework.access import guest_skills
from assistant_framework.skills import SkillContext, SkillManager
from assistant_framework.traces import TraceStore, collect_secrets, new_trace_id
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.calls import CallRunner
from messaging_llm_bot.agent.guard import ApproveCallback, CallGate
from messaging_llm_bot.agent.history import (
    HistoryStore,
    message_chars,
    message_tokens,
    outside_in_history,
    prompt_messages,
    trim_history,
)
from messaging_llm_bot.agent.honesty import honest_reply
from messaging_llm_bot.agent.locks import ConversationLock
from messaging_llm_bot.agent.native import SkillFormats, add_round, shrink_earlier_results, skill_calls
from messaging_llm_bot.agent.prompt import PromptBuilder, estimate_tokens, final_user_message, section_sizes
from messaging_llm_bot.agent.settings import BotSettings
from messaging_llm_bot.agent.turn import (
    AgentEvent,
    TurnRecord,
    TurnResult,
    TurnStopped,
    format_footer,
    hit_dict,
    record_request,
    stopped_reply,
    trace_of,
)
from messaging_llm_bot.llm.client import Completion, LLMClient, LLMError
from messaging_llm_bot.llm.structured import REPLY_SCHEMA
from messaging_llm_bot.llm.tools import tool_calls_of
from messaging_llm_bot.protocol import (
    ParsedOutput,
    StreamGuard,
    final_answer_request,
    parse_model_output,
)

__all__ = ["Agent", "AgentEvent", "TurnResult", "FAILED_TURN_REPLY"]

if TYPE_CHECKING:  # pragma: no cover
    from assistant_framework.collectors import CollectorManager

log = logging.getLogger(__name__)

FAILED_TURN_REPLY = "Sorry, something went wrong while answering; the details are in the bot's log. Please try again."
EMPTY_REPLY = "The model returned an empty answer. Please try again or rephrase."


def message_is_most_of(text: str, messages: list[dict]) -> bool:
    """True when the user's own text makes up at least half of a request's characters."""
    return len(text) * 2 >= sum(len(str(m.get("content") or "")) for m in messages)


def message_too_long_reply(err: LLMError, text: str) -> str:
    """The sentence for a message that alone does not fit the model's context."""
    where = f" on '{err.runner}'" if err.runner else ""
    return (
        f"Your message is too long for the model{where} (about {estimate_tokens(text):,} tokens). "
        "Please send it shorter or in parts, or send the text as a file and ask about it."
    )


class Agent:
    """Answers messages with the model and the skills; see the module docstring."""

    def __init__(
        self,
        config: dict,
        workspace: Workspace,
        skills: SkillManager,
        llm: LLMClient,
        *,
        collectors: "CollectorManager | None" = None,
        memory: Any = None,
        clock: Callable[[], datetime] | None = None,
        background_traces: bool = False,
    ) -> None:
        """``background_traces``: hand traces to the trace writer thread instead of writing them
        before ``handle_message`` returns; the owner must then call ``drain`` before it removes
        or leaves the workspace (the runtime does, at shutdown)."""
        self.workspace = workspace
        self.background_traces = background_traces
        self.llm = llm
        self.memory = memory
        self._clock = clock
        self._locks: dict[str, ConversationLock] = {}
        self._locks_guard = threading.Lock()
        self._last_recall: dict[str, list[dict]] = {}
        self._running: dict[str, threading.Event] = {}  # per conversation: the stop switch of the turn running now
        self._formats = SkillFormats()
        self.history = HistoryStore(workspace)
        self.skills = skills
        self.collectors = collectors
        self.configure(config)

    # -- setup -----------------------------------------------------------------

    def configure(
        self,
        config: dict,
        *,
        skills: SkillManager | None = None,
        collectors: "CollectorManager | None" = None,
        llm: LLMClient | None = None,
    ) -> None:
        """(Re)apply a config and optionally new components; the prompt is rebuilt on next use."""
        settings = BotSettings.from_config(config)
        try:
            zone = ZoneInfo(settings.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"runtime.timezone: unknown IANA time zone {settings.timezone!r}") from None
        self.config = config
        self.settings = settings
        self.zone = zone
        self.skills = skills or self.skills
        self.collectors = collectors if collectors is not None else self.collectors
        self.llm = llm or self.llm
        runner_keys = [r.api_key for r in self.llm.runners]
        self.traces = TraceStore(self.workspace, keep=settings.trace_keep, secrets=collect_secrets(config, runner_keys))
        self.gate = CallGate(self.workspace, config.get("policy"))
        self.prompt = PromptBuilder(
            settings, self.workspace, self.skills, collectors=self.collectors, memory=self.memory
        )

    def drain(self, timeout: float) -> bool:
        """Wait for queued trace writes (with ``background_traces``; call at shutdown); False on timeout."""
        return self.traces.drain(timeout)

    def invalidate_prompt(self) -> None:
        """Forget the cached system prompt (after /reload or a skill change)."""
        self.prompt.invalidate()

    def now(self) -> datetime:
        """The current time in runtime.timezone (from the injected clock when given)."""
        moment = self._clock() if self._clock else datetime.now(self.zone)
        return moment.astimezone(self.zone) if moment.tzinfo else moment.replace(tzinfo=self.zone)

    def _lock_for(self, conversation_id: str) -> ConversationLock:
        with self._locks_guard:
            return self._locks.setdefault(conversation_id, ConversationLock())

    def pending(self, conversation_id: str) -> int:
        """Messages of a conversation being answered or waiting their turn."""
        with self._locks_guard:
            lock = self._locks.get(conversation_id)
        return lock.pending if lock else 0

    # -- public calls ------------------------------------------------------------

    def reset(self, conversation_id: str) -> str:
        """Clear this conversation's history; returns a sentence saying what was cleared."""
        with self._lock_for(conversation_id):
            count = self.history.clear(conversation_id)
            self._last_recall.pop(conversation_id, None)
        if not count:
            return "This conversation had no history to clear. Notes, learnings and other saved data are kept."
        return (
            f"Cleared this conversation's history ({count} messages). Notes, learnings and other saved data are kept."
        )

    def stop(self, conversation_id: str) -> bool:
        """Ask the turn running in this conversation to stop; False when none is running.

        It stops at the next safe point: at once while a streamed answer arrives (the connection is
        closed, so the server stops generating), else when the model call in progress returns; a skill
        already running finishes, no further one starts. Messages waiting behind it are answered."""
        with self._locks_guard:
            switch = self._running.get(conversation_id)
        if switch is None or switch.is_set():
            return False
        switch.set()
        return True

    def last_recall(self, conversation_id: str) -> list[dict]:
        """The memory hits placed in the prompt of this conversation's last message."""
        return list(self._last_recall.get(conversation_id, []))

    def handle_message(
        self,
        conversation_id: str,
        text: str,
        *,
        on_event: Callable[[AgentEvent], None] | None = None,
        stream: bool = False,
        chat_id: int | str | None = None,
        user_id: int | str | None = None,
        private: bool = True,
        message_id: int | str | None = None,
        untrusted: bool = False,
        approve: ApproveCallback | None = None,
    ) -> TurnResult:
        """Answer one message (blocking, thread-safe); never raises for model or skill failures.

        ``approve(request) -> bool`` asks the owner to confirm a call the policy marks ``ask``;
        without it such calls are refused. ``untrusted`` marks the message itself as outside content.
        """
        started = time.monotonic()
        emit = _emitter(on_event)
        # The injected clock is only consulted inside the guarded block below.
        turn = TurnRecord(
            trace_id=new_trace_id(),
            conversation_id=conversation_id,
            text=text,
            now=datetime.now(self.zone),
            untrusted=untrusted,
            approve=approve,
        )
        if not private:
            # Not the owner's own chat: only the guest skills, on the chat's own folder (assistant_framework.access).
            turn.guest = guest_skills(self.config.get("policy"))
        context = SkillContext(
            conversation_id=conversation_id,
            chat_id=chat_id,
            user_id=user_id,
            config=self.config,
            timezone=self.settings.timezone,
            services={"memory": self.memory, "clock": self.now},
            untrusted=untrusted,
            private=private,
        )
        self._memory_signal("turn_started")
        try:
            with self._lock_for(conversation_id):
                turn.now = self.now()
                with self._locks_guard:
                    self._running[conversation_id] = turn.stop
                try:
                    reply, ok = self._transaction(
                        turn, context, emit, stream=stream, private=private, message_id=message_id, untrusted=untrusted
                    )
                finally:
                    with self._locks_guard:
                        if self._running.get(conversation_id) is turn.stop:
                            del self._running[conversation_id]
        except Exception as exc:  # the last line of defence: the user gets a sentence, the log the traceback
            log.exception("turn %s of conversation %r failed", turn.trace_id, conversation_id)
            turn.error = f"{type(exc).__name__}: {exc}"
            reply, ok = FAILED_TURN_REPLY, False
        elapsed = time.monotonic() - started
        usage = turn.usage()
        result = TurnResult(
            reply=reply,
            ok=ok,
            rounds=turn.rounds,
            skill_calls=turn.skill_calls,
            usage=usage,
            elapsed_s=elapsed,
            model_s=turn.model_s(),
            recalled=turn.recalled,
            trace_id=turn.trace_id,
            footer=format_footer(usage, turn.rounds, elapsed, turn.recalled) if self.settings.reply_footer else None,
            stopped=turn.stop.is_set() and not ok,
        )
        self._after_turn(turn, result)
        self._memory_signal("turn_finished")
        emit(AgentEvent("done", {"reply": reply}) if ok else AgentEvent("error", {"message": reply}))
        return result

    # -- the transaction (under the conversation lock) ---------------------------

    def _transaction(
        self, turn: TurnRecord, context: SkillContext, emit, *, stream: bool, private: bool, message_id, untrusted: bool
    ) -> tuple[str, bool]:
        conversation_id = turn.conversation_id
        # "untrusted" in the log row: a later recall of this turn (or of the reply) is outside content too.
        self._log_turn(
            turn,
            "user",
            turn.text,
            message_id=message_id,
            meta={"private": private, **({"untrusted": True} if untrusted else {})},
        )
        recall_block = self._recall(turn, private)
        self._last_recall[conversation_id] = turn.recalled
        system = self.prompt.system_prompt() if turn.guest is None else self.prompt.guest_prompt(turn.guest)
        budget, measure = self._history_budget()
        history = trim_history(self.history.load(conversation_id), budget, measure=measure)
        # A forwarded mail two turns ago (or a reply that restated it) is still in the prompt: its
        # text can steer this turn too.
        turn.history_original, turn.history_outside = outside_in_history(history)
        user_message = final_user_message(
            turn.text, turn.now, self.settings.timezone, recall_block=recall_block, untrusted=turn.guarded
        )
        turn.sizes = section_sizes(system, history, user_message)

        try:
            reply, ok = self._loop(turn, system.text, history, user_message, context, emit, stream)
        except TurnStopped:
            # Not kept in the history: a small model copies a "Stopped." answer it sees there.
            turn.error = "stopped by the owner"
            return stopped_reply(turn), False
        if ok:
            reply = honest_reply(reply, turn.saved_to, turn.wrote_memory)
            self.history.append_pair(
                conversation_id,
                turn.text,
                reply,
                budget_chars=budget,
                when=turn.now,
                untrusted=turn.untrusted,
                derived=turn.history_original,
                measure=measure,
            )
            # A reply written with outside content in view may restate it: logged (and extracted) as outside.
            self._log_turn(
                turn,
                "assistant",
                reply,
                message_id=None,
                meta={"trace_id": turn.trace_id, **({"untrusted": True} if turn.guarded else {})},
            )
        return reply, ok

    def _history_budget(self) -> tuple[int, Callable[[dict], int]]:
        """(budget, how a message is measured): estimated tokens when history_budget_tokens is set."""
        tokens = self.settings.history_budget_tokens
        return (tokens, message_tokens) if tokens is not None else (self.settings.history_budget_chars, message_chars)

    def _log_turn(self, turn: TurnRecord, role: str, text: str, *, message_id, meta: dict) -> None:
        if self.memory is None:
            return
        try:
            record = self.memory.log_turn(
                turn.conversation_id, role, text, time=self.now(), message_id=message_id, meta=meta
            )
        except Exception:  # losing one log line is bad; losing the answer too would be worse
            log.exception("memory log of a %s turn failed in conversation %r", role, turn.conversation_id)
            return
        turn.log_ids.append((record or {}).get("turn_id"))

    def _recall(self, turn: TurnRecord, private: bool) -> str:
        if self.memory is None:
            return ""
        try:
            hits = self.memory.recall(turn.text, turn.conversation_id, private=private)
            block = self.memory.format_recall(hits) if hits else ""
        except Exception:  # recall is an aid: answer without it rather than not at all
            log.exception("memory recall failed for conversation %r; answering without it", turn.conversation_id)
            return ""
        turn.recalled = [hit_dict(h) for h in hits]
        outside = getattr(self.memory, "outside_hits", None)
        if block and outside is not None and outside(hits):
            # Recalled feed items, mails or forwarded text are outside content, as if a skill had read them.
            turn.untrusted = True
        return block

    def _loop(
        self,
        turn: TurnRecord,
        system: str,
        history: list[dict],
        user_message: str,
        context: SkillContext,
        emit,
        stream: bool,
    ) -> tuple[str, bool]:
        # What the model is offered and what its answer is read against: a guest turn's skills only
        # (the prompt, the answer schema, the native tools and the parser agree).
        names = offered_names(self.skills, turn.guest)
        max_rounds = self.settings.max_skill_rounds
        turn_messages: list[dict] = [{"role": "user", "content": user_message}]
        native_turn: list[dict] = [{"role": "user", "content": user_message}]  # the same round as native tool messages
        history_cut = results_cut = False
        repeated, last_calls = False, None
        while True:
            round_no = turn.rounds + 1
            head = [{"role": "system", "content": system}, *prompt_messages(history)]
            messages = [*head, *turn_messages]
            turn.check_stop()
            emit(AgentEvent("thinking", {"round": round_no}))
            try:
                # Asked for the final answer, or the model repeated its last calls: a constrained
                # answer may then only be a reply (a small model otherwise loops on one call).
                reply_only = round_no > max_rounds or repeated
                completion = self._complete(
                    turn,
                    messages,
                    names,
                    stream,
                    emit,
                    native=lambda head=head: [*head, *native_turn],
                    reply_only=reply_only,
                )
            except LLMError as err:
                record_request(turn, round_no, messages, None, err)
                if err.kind == "context_length" and not history_cut and history:
                    history_cut = True
                    budget, measure = self._history_budget()
                    size = sum(measure(m) for m in history)
                    history = trim_history(history, min(budget, size) // 2, low_water=1.0, measure=measure)
                    log.info(
                        "context too long for conversation %r; retrying with history cut to %d messages",
                        turn.conversation_id,
                        len(history),
                    )
                    continue
                if (
                    err.kind == "context_length"
                    and not results_cut
                    and shrink_earlier_results(turn_messages, native_turn)
                ):
                    # Several rounds of skill results (up to the result limit each) outgrew a small context.
                    results_cut = True
                    log.info(
                        "context too long for conversation %r; retrying with earlier skill results cut",
                        turn.conversation_id,
                    )
                    continue
                turn.error = err.user_message()
                if err.kind == "context_length" and message_is_most_of(turn.text, messages):
                    # Cutting the history cannot help and /reset would not either: say what will.
                    return message_too_long_reply(err, turn.text), False
                return err.user_message(), False
            turn.rounds = round_no
            turn.check_stop()  # a stop during a call that could not be cut short: its answer is dropped
            native_calls = tool_calls_of(completion.raw)
            if native_calls:
                parsed = ParsedOutput(skill_calls(native_calls, names), None, ["native_tool_calls"])
            else:
                # With outside content in view a call the model only quotes must not run (protocol/framing.py).
                parsed = parse_model_output(completion.text, names, guarded=turn.guarded)
            record_request(turn, round_no, messages, completion, None, parsed)
            if not parsed.calls:
                reply = (parsed.reply or "").strip()
                return (reply, True) if reply else (EMPTY_REPLY, False)
            if round_no > max_rounds:
                # The model was told to stop calling skills and did not.
                return (
                    f"I could not finish this within {max_rounds} skill rounds; please ask again more specifically.",
                    True,
                )
            calls = CallRunner(self.skills, self.gate, self.workspace, self.settings)
            signature = [calls.key(c) for c in parsed.calls]
            repeated, last_calls = signature == last_calls, signature
            feedbacks = []
            for call in parsed.calls:
                turn.check_stop()  # no further skill starts after a stop; one already run stays done
                feedbacks.append(calls.run(call, round_no, turn, context, emit))
            final = final_answer_request() if round_no == max_rounds else None
            add_round(turn_messages, native_turn, completion.text, native_calls, parsed.calls, feedbacks, final)

    def protocol_schema(self) -> dict:
        """The answer schema for the loaded skills, rebuilt only when the skill set changes
        (the same object each time, so the request stays byte-stable)."""
        return self._skill_formats(self.skills.names())[0]

    def _skill_formats(self, names: list[str]) -> tuple[dict, list[dict] | None]:
        return self._formats.get(self.skills, self.llm.runners, names)

    def _complete(
        self,
        turn: TurnRecord,
        messages: list[dict],
        names: list[str],
        stream: bool,
        emit,
        native=None,
        reply_only: bool = False,
    ) -> Completion:
        schema, tools = (REPLY_SCHEMA, None) if reply_only or not names else self._skill_formats(names)
        if not stream:
            return self.llm.complete(
                messages, schema=schema, schema_name="skill_call", tools=tools, native_messages=native
            )
        guard = StreamGuard(names)
        shown = [""]

        def on_delta(text_so_far: str) -> None:
            # Raised inside the client's read loop: the response is closed, so the server stops generating.
            turn.check_stop()
            visible = guard.feed(text_so_far)
            if visible and visible != shown[0]:
                shown[0] = turn.shown = visible
                emit(AgentEvent("delta", {"text": visible}))

        return self.llm.complete(
            messages,
            stream=True,
            on_delta=on_delta,
            schema=schema,
            schema_name="skill_call",
            tools=tools,
            native_messages=native,
        )

    # -- after the lock ------------------------------------------------------------

    def _memory_signal(self, name: str) -> None:
        """Tell the memory service a turn started/finished (its background calls wait for idle)."""
        signal = getattr(self.memory, name, None)
        if signal is None:
            return
        try:
            signal()
        except Exception:  # bookkeeping must never cost the user the reply
            log.exception("memory %s signal failed", name)

    def _after_turn(self, turn: TurnRecord, result: TurnResult) -> None:
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
        if self.memory is not None and result.ok:
            try:
                ids = tuple(i for i in turn.log_ids if i)
                # An untrusted turn's facts are stored marked: outside text never becomes an owner fact.
                self.memory.after_turn(
                    turn.conversation_id, turn.text, result.reply, turn_ids=ids, untrusted=turn.guarded
                )
            except Exception:
                log.exception("memory upkeep after turn %s failed", turn.trace_id)


def offered_names(skills: SkillManager, guest: frozenset[str] | None) -> list[str]:
    """The skill names a turn offers the model: all for the owner's own chat, a guest turn's own."""
    names = skills.names()
    return names if guest is None else [name for name in names if name in guest]


def _emitter(on_event: Callable[[AgentEvent], None] | None) -> Callable[[AgentEvent], None]:
    """Wrap a frontend callback so its failures never break the turn."""

    def emit(event: AgentEvent) -> None:
        if on_event is None:
            return
        try:
            on_event(event)
        except Exception:
            log.exception("event handler failed on %s event", event.kind)

    return emit
