"""The rounds of one turn: ask the model, run the skill calls it makes, feed the results back, repeat.

A round is one model request and the calls of its answer. The turn ends with the first answer
that calls no skill (the reply), after ``max_skill_rounds`` rounds with a request for the final
answer, on a failure (a sentence for the user), or at the owner's stop (``TurnStopped``). A
request the model's context cannot hold is cut and sent again (agent/context_limit.py).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from assistant_framework.config.settings import Settings
from assistant_framework.skills import SkillContext, SkillManager
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.answer_bounds import MAX_CALLS_PER_ANSWER, answer_as_kept, within_bounds
from messaging_llm_bot.agent.calls import CallRunner
from messaging_llm_bot.agent.choice import ChoiceFormats, call_from_args, chosen_skill
from messaging_llm_bot.agent.context_limit import ContextCuts, failure_reply
from messaging_llm_bot.agent.guard import CallGate
from messaging_llm_bot.agent.history import prompt_messages
from messaging_llm_bot.agent.images import ImageInput, user_content
from messaging_llm_bot.agent.native import SkillFormats, add_round, skill_calls
from messaging_llm_bot.agent.steering import Steered
from messaging_llm_bot.agent.turn import AgentEvent, Emit, SkillCallRecord, TurnRecord, record_request
from messaging_llm_bot.llm.client import Completion, LLMClient, LLMError
from messaging_llm_bot.llm.hangup import StopSwitch, hang_up_on
from messaging_llm_bot.llm.structured import REPLY_SCHEMA
from messaging_llm_bot.llm.tools import ToolCall, tool_calls_of
from messaging_llm_bot.llm.wire import Message
from messaging_llm_bot.protocol import (
    PLACEHOLDER_REPLIES,
    ParsedOutput,
    SkillCall,
    StreamGuard,
    calls_left_out,
    final_answer_request,
    parse_model_output,
)

log = logging.getLogger(__name__)

EMPTY_REPLY = "The model returned an empty answer. Please try again or rephrase."
#: A reply longer than this is cut, saying so (a model looping, or a server ignoring max_tokens: a megabyte came
#: as 245 Telegram messages); eight Telegram messages of a long answer still fit.
MAX_REPLY_CHARS = 32_000


def _joined(head: list[Message], rounds: list[Message]) -> Callable[[], list[Message]]:
    """The messages of a request in native form (asked for only when a runner sends native tools)."""
    return lambda: [*head, *rounds]


def _add_steered(steered: list[Steered], turn_messages: list[Message], native_turn: list[Message]) -> None:
    """Messages that entered the turn, as new user messages of its requests (both forms)."""
    for one in steered:
        turn_messages.append({"role": "user", "content": one.text})
        native_turn.append({"role": "user", "content": one.text})


def offered_names(skills: SkillManager, guest: frozenset[str] | None) -> list[str]:
    """The skill names a turn offers the model: all for the owner's own chat, a guest turn's own."""
    names = skills.offered_names()
    return names if guest is None else [name for name in names if name in guest]


@dataclass
class TurnPrompt:
    """What a turn's first request is made of: the system text, the history and the user's message."""

    system: str
    history: list[Message]
    user_message: str
    budget: int  # the history's budget, and how a message of it is measured
    measure: Callable[[Message], int]
    images: tuple[ImageInput, ...] = ()  # seen in this turn's requests only (agent/images.py)


@dataclass
class Rounds:
    """The agent's parts one turn's rounds use (built per turn: a /reload swaps them between turns)."""

    llm: LLMClient
    skills: SkillManager
    gate: CallGate
    workspace: Workspace
    settings: Settings
    formats: SkillFormats
    #: With ``skill_choice: two_step``: a round names its skill first and gets its arguments next.
    choices: ChoiceFormats | None = None
    vision: bool = False  # the turn's messages carry images: only the runners that take them are asked
    #: The chat's ``/model`` choice (agent/runner_choice.py): asked first in every request of the turn.
    prefer: str | None = None

    def run(
        self, turn: TurnRecord, prompt: TurnPrompt, context: SkillContext, emit: Emit, stream: bool
    ) -> tuple[str, bool]:
        """Run the turn's rounds; (reply, ok). Raises ``TurnStopped`` at a stop."""
        # What the model is offered and what its answer is read against: a guest turn's skills only, within a
        # served client's (the prompt, the answer schema, the native tools and the parser agree).
        names = offered_names(self.skills, turn.offered)
        self.vision = bool(prompt.images)
        first = user_content(prompt.user_message, prompt.images)
        state = _TurnSoFar(
            turn,
            prompt,
            names,
            context,
            emit,
            stream,
            history=prompt.history,
            messages=[{"role": "user", "content": first}],
            native=[{"role": "user", "content": first}],
            cuts=ContextCuts(turn.conversation_id, prompt.budget, prompt.measure),
        )
        while True:
            outcome = self._round(state)
            if outcome is not None:
                return outcome

    def _round(self, t: _TurnSoFar) -> tuple[str, bool] | None:
        """One round: its request, the answer read, its calls run; the turn's (reply, ok) when it ends there."""
        turn, max_rounds = t.turn, self.settings.llm.max_skill_rounds
        round_no = turn.rounds + 1
        if turn.steer is not None:
            # A round boundary: what the same person wrote meanwhile enters as a new user message.
            _add_steered(turn.steer.take(round_no), t.messages, t.native)
            turn.steer.interrupted()  # an interrupt before this request cut nothing: forget it
        head = [{"role": "system", "content": t.prompt.system}, *prompt_messages(t.history)]
        messages = [*head, *t.messages]
        turn.check_stop()
        t.emit(AgentEvent("thinking", {"round": round_no}))
        # Asked for the final answer, or the model repeated its last calls: a constrained
        # answer may then only be a reply (a small model otherwise loops on one call).
        reply_only = round_no > max_rounds or t.repeated
        try:
            completion = self._complete(
                turn, messages, t.names, t.stream, t.emit, native=_joined(head, t.native), reply_only=reply_only
            )
        except LLMError as err:
            record_request(turn, round_no, messages, None, err)
            turn.check_stop()  # the call was hung up by the stop: a stop, not a failure to tell
            return None if _asked_again(t, err) else _failed(turn, err, messages)
        turn.rounds = round_no
        turn.check_stop()  # a stop during a call that could not be cut short: its answer is dropped
        native_calls = tool_calls_of(completion.raw)
        parsed = within_bounds(_read_answer(t, completion, native_calls))
        record_request(turn, round_no, messages, completion, None, parsed)
        asked: list[Message] = []
        chosen = chosen_skill(parsed, t.names) if self.choices and not (native_calls or reply_only) else None
        if chosen:
            # two_step: the skill was named; its arguments are asked next, with its schema alone.
            try:
                completion, parsed, asked = self._arguments(turn, round_no, messages, completion.text, chosen)
            except LLMError as err:
                return _failed(turn, err, messages)
        if not parsed.calls:
            return _ending(t, round_no, parsed)
        if round_no > max_rounds:
            # The model was told to stop calling skills and did not.
            return (
                f"I could not finish this within {max_rounds} skill rounds; please ask again more specifically.",
                True,
            )
        calls, native_calls = parsed.calls[:MAX_CALLS_PER_ANSWER], native_calls[:MAX_CALLS_PER_ANSWER]
        text, native_calls = answer_as_kept(completion.text, native_calls, calls)
        feedbacks = self._run_calls(t, round_no, calls)
        if len(parsed.calls) > len(calls):
            feedbacks[-1] += "\n\n" + calls_left_out(len(parsed.calls) - len(calls), MAX_CALLS_PER_ANSWER)
        final = final_answer_request() if round_no == max_rounds else None
        t.messages.extend(asked)  # the choice and the arguments request stay: each request extends the last
        t.native.extend(asked)
        add_round(t.messages, t.native, text, native_calls, calls, feedbacks, final)
        return None

    def _run_calls(self, t: _TurnSoFar, round_no: int, calls: list[SkillCall]) -> list[str]:
        """Run one round's calls in order; their feedbacks. Notes whether the round repeated the last one's."""
        runner = CallRunner(self.skills, self.gate, self.workspace, self.settings)
        signature = [runner.key(c) for c in calls]
        t.repeated, t.last_calls = signature == t.last_calls, signature
        feedbacks = []
        for call in calls:
            t.turn.check_stop()  # no further skill starts after a stop; one already run stays done
            feedbacks.append(runner.run(call, round_no, t.turn, t.context, t.emit))
        return feedbacks

    def _arguments(
        self, turn: TurnRecord, round_no: int, messages: list[Message], choice_text: str, skill: str
    ) -> tuple[Completion, ParsedOutput, list[Message]]:
        """The second request of a two_step round: ``skill``'s arguments, asked with its schema alone
        after the choice; (its answer, the call it makes, the two messages it appended)."""
        assert self.choices is not None
        step = self.choices.args_step(self.skills, choice_text, skill)
        sent = [*messages, *step.messages]
        turn.check_stop()
        try:
            completion = self.llm.complete(
                sent, schema=step.schema, schema_name="skill_args", vision=self.vision, prefer=self.prefer
            )
        except LLMError as err:
            record_request(turn, round_no, sent, None, err)
            raise
        turn.check_stop()
        parsed = within_bounds(ParsedOutput([call_from_args(skill, completion.text)], None, ["two_step"]))
        record_request(turn, round_no, sent, completion, None, parsed)
        return completion, parsed, step.messages

    def _complete(
        self,
        turn: TurnRecord,
        messages: list[Message],
        names: list[str],
        stream: bool,
        emit: Emit,
        native: Callable[[], list[Message]],
        reply_only: bool = False,
    ) -> Completion:
        """One model request of a round: the answer schema (and native tools) for ``names``, streamed
        when asked, with only the reply's text shown as it arrives."""
        with self._cut_on_interrupt(turn) as cut:
            return self._request(turn, messages, names, stream, emit, native, reply_only, cut)

    @contextlib.contextmanager
    def _cut_on_interrupt(self, turn: TurnRecord) -> Iterator[threading.Event]:
        """The switch that hangs up this request: the owner's stop, or a message in busy mode interrupt."""
        if turn.steer is None:
            yield turn.stop
            return
        cut = StopSwitch()
        with hang_up_on(turn.stop, cut.set), turn.steer.on_interrupt(cut.set):
            yield cut

    def _request(
        self,
        turn: TurnRecord,
        messages: list[Message],
        names: list[str],
        stream: bool,
        emit: Emit,
        native: Callable[[], list[Message]],
        reply_only: bool,
        cut: threading.Event,
    ) -> Completion:
        if reply_only or not names:
            schema, tools = REPLY_SCHEMA, None
        elif self.choices is not None:
            schema, tools = self.choices.choice(self.skills, turn.text, names), None
        else:
            schema, tools = self.formats.get(self.skills, self.llm.runners, names)
        if not stream:
            return self.llm.complete(
                messages,
                schema=schema,
                schema_name="skill_call",
                tools=tools,
                native_messages=native,
                vision=self.vision,
                stop=cut,
                prefer=self.prefer,
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
            vision=self.vision,
            stop=cut,
            prefer=self.prefer,
        )


@dataclass
class _TurnSoFar:
    """One turn's rounds so far: what each request is built from, and what the last round called."""

    turn: TurnRecord
    prompt: TurnPrompt
    names: list[str]  # the skills offered (offered_names)
    context: SkillContext
    emit: Emit
    stream: bool
    history: list[Message]  # the conversation before the turn, shortened when the context cannot hold it
    messages: list[Message]  # the turn's own: the user's message, then each round's answer and results
    native: list[Message]  # the same rounds as native tool messages (tool_calls and ``role: tool`` results)
    cuts: ContextCuts
    repeated: bool = False  # the last round's calls were the ones of the round before
    last_calls: list[str] | None = None


def _asked_again(t: _TurnSoFar, err: LLMError) -> bool:
    """A failed request is asked again: hung up by a new message, or the context cut to fit."""
    if t.turn.steer is not None and t.turn.steer.interrupted():
        return True  # hung up by a new message (busy mode interrupt): asked again with it
    shorter = t.cuts.cut_history(err, t.history)
    if shorter is not None:
        t.history = shorter
        return True
    return t.cuts.cut_results(err, t.messages, t.native)


def _failed(turn: TurnRecord, err: LLMError, messages: list[Message]) -> tuple[str, bool]:
    """The turn ends on a model failure: a sentence for the user."""
    turn.error = err.user_message()
    return failure_reply(err, turn.text, messages), False


def _read_answer(t: _TurnSoFar, completion: Completion, native_calls: list[ToolCall]) -> ParsedOutput:
    """The calls (native ones first) or the reply of a round's answer."""
    if native_calls:
        return ParsedOutput(skill_calls(native_calls, t.names), None, ["native_tool_calls"])
    # With outside content in view a call the model only quotes must not run (protocol/framing.py).
    return parse_model_output(completion.text, t.names, guarded=t.turn.guarded)


def _ending(t: _TurnSoFar, round_no: int, parsed: ParsedOutput) -> tuple[str, bool] | None:
    """An answer without calls ends the turn with its reply, unless a message sent meanwhile is asked about."""
    if t.turn.steer is not None:
        more = t.turn.steer.take(round_no + 1, close_if_empty=True)
        if more:
            _add_steered(more, t.messages, t.native)
            return None
    reply = (parsed.reply or "").strip()
    if reply in PLACEHOLDER_REPLIES:
        reply = placeholder_reply(reply, t.turn.skill_calls)
    if len(reply) > MAX_REPLY_CHARS:
        left = len(reply) - MAX_REPLY_CHARS
        reply = f"{reply[:MAX_REPLY_CHARS]}\n\n[… the model's answer went on for {left:,} more characters: cut here]"
    return (reply, True) if reply else (EMPTY_REPLY, False)


def placeholder_reply(copied: str, calls: list[SkillCallRecord]) -> str:
    """What the user gets when the model only copied the protocol's example reply: that, and what each skill of
    the turn did (a saved file, a failure), rather than a bare "..." or "<text for the user>"."""
    said = f'The model wrote no answer of its own (only "{copied}").'
    if not calls:
        return said
    return f"{said} What it did: {'; '.join(f'{call.skill} {call.outcome()}' for call in calls)}."
