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
from messaging_llm_bot.agent.calls import CallRunner
from messaging_llm_bot.agent.choice import ChoiceFormats, call_from_args, chosen_skill
from messaging_llm_bot.agent.context_limit import ContextCuts, failure_reply
from messaging_llm_bot.agent.guard import CallGate
from messaging_llm_bot.agent.history import prompt_messages
from messaging_llm_bot.agent.images import ImageInput, user_content
from messaging_llm_bot.agent.native import SkillFormats, add_round, skill_calls
from messaging_llm_bot.agent.steering import Steered
from messaging_llm_bot.agent.turn import AgentEvent, Emit, TurnRecord, record_request
from messaging_llm_bot.llm.client import Completion, LLMClient, LLMError
from messaging_llm_bot.llm.hangup import StopSwitch, hang_up_on
from messaging_llm_bot.llm.structured import REPLY_SCHEMA
from messaging_llm_bot.llm.tools import tool_calls_of
from messaging_llm_bot.llm.wire import Message
from messaging_llm_bot.protocol import ParsedOutput, StreamGuard, final_answer_request, parse_model_output

log = logging.getLogger(__name__)

EMPTY_REPLY = "The model returned an empty answer. Please try again or rephrase."


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
        max_rounds = self.settings.llm.max_skill_rounds
        history = prompt.history
        first = user_content(prompt.user_message, prompt.images)
        self.vision = bool(prompt.images)
        turn_messages: list[Message] = [{"role": "user", "content": first}]
        # The same rounds as native tool messages (tool_calls and ``role: tool`` results).
        native_turn: list[Message] = [{"role": "user", "content": first}]
        cuts = ContextCuts(turn.conversation_id, prompt.budget, prompt.measure)
        repeated, last_calls = False, None
        steer = turn.steer
        while True:
            round_no = turn.rounds + 1
            if steer is not None:
                # A round boundary: what the same person wrote meanwhile enters as a new user message.
                _add_steered(steer.take(round_no), turn_messages, native_turn)
                steer.interrupted()  # an interrupt before this request cut nothing: forget it
            head = [{"role": "system", "content": prompt.system}, *prompt_messages(history)]
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
                    native=_joined(head, native_turn),
                    reply_only=reply_only,
                )
            except LLMError as err:
                record_request(turn, round_no, messages, None, err)
                turn.check_stop()  # the call was hung up by the stop: a stop, not a failure to tell
                if steer is not None and steer.interrupted():
                    continue  # hung up by a new message (busy mode interrupt): asked again with it
                shorter = cuts.cut_history(err, history)
                if shorter is not None:
                    history = shorter
                    continue
                if cuts.cut_results(err, turn_messages, native_turn):
                    continue
                turn.error = err.user_message()
                return failure_reply(err, turn.text, messages), False
            turn.rounds = round_no
            turn.check_stop()  # a stop during a call that could not be cut short: its answer is dropped
            native_calls = tool_calls_of(completion.raw)
            if native_calls:
                parsed = ParsedOutput(skill_calls(native_calls, names), None, ["native_tool_calls"])
            else:
                # With outside content in view a call the model only quotes must not run (protocol/framing.py).
                parsed = parse_model_output(completion.text, names, guarded=turn.guarded)
            record_request(turn, round_no, messages, completion, None, parsed)
            asked: list[Message] = []
            chosen = chosen_skill(parsed, names) if self.choices and not (native_calls or reply_only) else None
            if chosen:
                # two_step: the skill was named; its arguments are asked next, with its schema alone.
                try:
                    completion, parsed, asked = self._arguments(turn, round_no, messages, completion.text, chosen)
                except LLMError as err:
                    turn.error = err.user_message()
                    return failure_reply(err, turn.text, messages), False
            if not parsed.calls and steer is not None:
                # The answer would end the turn: a message sent meanwhile is asked about with it instead.
                more = steer.take(round_no + 1, close_if_empty=True)
                if more:
                    _add_steered(more, turn_messages, native_turn)
                    continue
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
            turn_messages.extend(asked)  # the choice and the arguments request stay: each request extends the last
            native_turn.extend(asked)
            add_round(turn_messages, native_turn, completion.text, native_calls, parsed.calls, feedbacks, final)

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
        parsed = ParsedOutput([call_from_args(skill, completion.text)], None, ["two_step"])
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
