"""The records of one turn: progress events, the result, and the running record that becomes the trace."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from datetime import datetime

from assistant_framework.json_types import JsonObject
from assistant_framework.traces import TraceRecord
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.guard import ApproveCallback
from messaging_llm_bot.agent.images import without_pixels
from messaging_llm_bot.agent.outside import HISTORY, TURN, OutsideSource
from messaging_llm_bot.agent.steering import SteerBox
from messaging_llm_bot.llm.client import Completion, LLMError
from messaging_llm_bot.llm.hangup import StopSwitch
from messaging_llm_bot.llm.wire import Message
from messaging_llm_bot.protocol import ParsedOutput

FAILED_TURN_REPLY = "Sorry, something went wrong while answering; the details are in the bot's log. Please try again."
#: A memory hit as a plain dict (``hit_dict``): what a turn recalled, for its result and its trace.
Hit = JsonObject
#: One model request of a turn as the trace records it (``record_request``): what was sent and what came back.
RequestEntry = JsonObject

_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cache_write_tokens", "reasoning_tokens")


class TurnStopped(Exception):
    """The owner stopped the turn; raised at the next point where stopping loses nothing half-done."""


def stopped_reply(turn: TurnRecord) -> str:
    """What the owner sees after stopping: the text streamed so far, and what already ran."""
    done = list(dict.fromkeys(c.skill for c in turn.skill_calls if c.ok))
    note = "⏹ Stopped." + (f" Already done before the stop: {', '.join(done)}." if done else "")
    return f"{turn.shown.rstrip()}\n\n{note}" if turn.shown.strip() else note


def error_for_user(skill: str, error: str) -> str:
    """A skill's error as the user reads it beside the skill's name: the skill manager's "skill 'x' failed: "
    (which the model needs, the user sees the name already) left out, and "ValueError: " (what a skill raises for
    arguments it cannot use: "action 'add' needs text"); another exception keeps its name (a bug's clue)."""
    return error.removeprefix(f"skill {skill!r} failed: ").removeprefix("ValueError: ")


@dataclass
class SkillCallRecord:
    """One skill call of a turn: what was asked, what the gate decided and how it ended.

    The trace keeps it as a JSON object of the fields that were set (``as_dict``), the form
    earlier traces have; ``args`` are the prepared (type-fitted) arguments once the call could
    be prepared, else as the model wrote them."""

    skill: str
    args: object
    round: int
    ok: bool = False
    error: str | None = None
    error_kind: str | None = None  # invalid_args, unknown_skill, not_allowed, or the skill's own
    decision: str | None = None  # the policy gate's action (allow, ask, deny), when it was asked
    elapsed_s: float | None = None  # how long the skill ran, when it ran
    saved_to: str | None = None  # where a write call saved, as the reply may name it
    repeated: bool = False  # the same write already ran in this turn: not run again

    def outcome(self) -> str:
        """How the call ended, for the user: "saved to notes/x.md", "done" or "failed: <why>"."""
        if self.error:
            return "failed: " + error_for_user(self.skill, self.error)
        return f"saved to {self.saved_to}" if self.saved_to else "done"

    def as_dict(self) -> JsonObject:
        """The trace's form: every field that is set (``repeated`` only when true)."""
        out: JsonObject = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.name in ("skill", "args", "round", "ok") or (value is not None and value is not False):
                out[spec.name] = value
        return out


@dataclass
class AgentEvent:
    """Progress of a turn: thinking, skill_call, skill_result, delta, done, error."""

    kind: str
    data: JsonObject


#: Where a turn's progress events go (the frontend's callback, wrapped so its failures never break the turn).
Emit = Callable[[AgentEvent], None]


@dataclass
class TurnResult:
    """The outcome of one message; ``reply`` is never empty."""

    reply: str
    ok: bool
    rounds: int = 0
    skill_calls: list[SkillCallRecord] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    model_s: float = 0.0
    recalled: list[Hit] = field(default_factory=list)
    trace_id: str | None = None
    footer: str | None = None
    stopped: bool = False  # the owner stopped the turn (/stop, Ctrl-C) before it finished


@dataclass
class TurnRecord:
    """Mutable record of one turn while it runs (becomes the trace)."""

    trace_id: str
    conversation_id: str
    text: str
    now: datetime
    requests: list[RequestEntry] = field(default_factory=list)
    skill_calls: list[SkillCallRecord] = field(default_factory=list)
    saved_to: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)  # the files write calls named (indexed as the turn ends)
    wrote_memory: bool = False
    recalled: list[Hit] = field(default_factory=list)
    sizes: dict[str, object] = field(default_factory=dict)
    rounds: int = 0
    error: str | None = None
    log_ids: list[str] = field(default_factory=list)  # the memory log's ids of this turn's lines
    untrusted: bool = False  # content from outside entered the turn: guarded calls need confirmation
    history_outside: bool = False  # the prompt's history holds outside content or a reply written beside it
    history_original: bool = False  # ... and of those, an earlier turn's outside content itself
    approve: ApproveCallback | None = None  # the frontend's confirmation callback for "ask" decisions
    guest: frozenset[str] | None = None  # a guest turn (not the owner's own chat): the skills it may call
    #: A SKILL.md skill read in this turn whose ``allowed-tools`` narrow what the model may call: (its name,
    #: the skills it allows). None: no narrowing.
    narrowed: tuple[str, frozenset[str]] | None = None
    limit: frozenset[str] | None = None  # a served client's skills: the turn may call no other (AgentMessage.skills)
    #: The skills that need a service this turn was not given (``REQUIRES_SERVICE``): left out of ``limit``.
    unserved: frozenset[str] = frozenset()
    extract_facts: bool = True  # False: no facts are taken from the turn (a served client's, a guest chat's)
    job: str | None = None  # the scheduled job whose run this turn is
    area: Workspace | None = None  # a guest turn's own folder, made on first use
    stop: StopSwitch = field(default_factory=StopSwitch)  # set by ``Agent.stop``; hangs up the model call
    shown: str = ""  # the reply text streamed to the user so far
    writes_done: dict[str, str] = field(default_factory=dict)  # a successful write call's key -> its result text
    place: str = ""  # the chat or topic the message came from (its sessions are agent/sessions.py)
    chosen_runner: str | None = None  # the chat's /model choice, asked first (agent/runner_choice.py)
    steer: SteerBox | None = None  # messages the same person sends meanwhile (agent/steering.py)
    # The outside content in the turn's context, by key (agent/outside.py): what the owner's question names.
    outside: dict[str, OutsideSource] = field(default_factory=dict)

    @property
    def offered(self) -> frozenset[str] | None:
        """The skills the turn may see and call: a guest turn's, within a served client's limit; None: every one."""
        if self.limit is None:
            return self.guest
        return self.limit if self.guest is None else self.guest & self.limit

    def check_stop(self) -> None:
        """Raise ``TurnStopped`` once the owner has asked to stop this turn."""
        if self.stop.is_set():
            raise TurnStopped

    def mark_outside(self, source: OutsideSource) -> None:
        """Outside content is in the turn's context: this turn's or recalled into it (the turn is untrusted),
        or the history's (``history_outside`` says so); named in the owner's question."""
        self.outside.setdefault(source.key, source)
        if source.where != HISTORY:
            self.untrusted = True

    @property
    def read_outside(self) -> bool:
        """Outside content entered by the message itself or a call's result: the history keeps the turn
        marked. Memory recalled into the turn is not kept there (only the reply written beside it)."""
        return any(source.where == TURN for source in self.outside.values())

    @property
    def guarded(self) -> bool:
        """Outside content is in front of the model (this turn's or the history's): guarded calls
        need confirmation, what a skill writes is marked, and the reply is logged as outside;
        the owner's own message is logged as theirs."""
        return self.untrusted or self.history_outside

    def usage(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for request in self.requests:
            for key, value in (request.get("usage") or {}).items():
                if key in _USAGE_FIELDS and isinstance(value, int):
                    total[key] = total.get(key, 0) + value
        return total

    def model_s(self) -> float:
        return sum(float(r.get("elapsed_s") or 0.0) for r in self.requests)


def hit_dict(hit: object) -> Hit:
    """A memory hit as a plain dict (for TurnResult.recalled and traces)."""
    if is_dataclass(hit) and not isinstance(hit, type):
        return asdict(hit)
    if isinstance(hit, dict):
        return dict(hit)
    return {"text": str(hit)}


def reply_text(result: TurnResult) -> str:
    """The text a frontend sends for a turn: the reply, and the footer (in italics) when the
    settings ask for one. Markdown: each frontend renders it as its chat shows Markdown."""
    reply = result.reply or FAILED_TURN_REPLY
    return f"{reply}\n\n_{result.footer}_" if result.footer else reply


def without_footer(text: str) -> str:
    """``text`` (as ``reply_text`` made it) without its footer: what is said, not the figures (spoken replies)."""
    head, sep, last = text.rpartition("\n\n")
    return head if sep and _FOOTER.fullmatch(last) else text


_FOOTER = re.compile(r"_— [^\n]*_")


def format_footer(
    usage: Mapping[str, int],
    rounds: int,
    elapsed_s: float,
    recalled: list[Hit] | None = None,
    runner: str | None = None,
) -> str:
    """``— small · 1200 in (800 cached) · 40 out · 2 rounds · 3.1 s · recalled: notes/a.md`` with only what was
    reported; ``runner``: the runner that answered, named when the chat chose one with /model."""
    parts = [runner] if runner else []
    if "prompt_tokens" in usage:
        extra = [
            f"{usage[k]} {label}"
            for k, label in (("cached_tokens", "cached"), ("cache_write_tokens", "cache writes"))
            if usage.get(k)
        ]
        parts.append(f"{usage['prompt_tokens']} in" + (f" ({', '.join(extra)})" if extra else ""))
    if "completion_tokens" in usage:
        reasoning = f" ({usage['reasoning_tokens']} reasoning)" if usage.get("reasoning_tokens") else ""
        parts.append(f"{usage['completion_tokens']} out{reasoning}")
    parts.append(f"{rounds} round{'s' if rounds != 1 else ''}")
    parts.append(f"{elapsed_s:.1f} s")
    sources = list(dict.fromkeys(str(h.get("path") or h.get("source") or "") for h in recalled or [] if h))
    if sources:
        shown = ", ".join(s for s in sources[:3] if s) + (f" +{len(sources) - 3}" if len(sources) > 3 else "")
        parts.append(f"recalled: {shown}")
    return "— " + " · ".join(parts)


def record_request(
    turn: TurnRecord,
    round_no: int,
    messages: list[Message],
    completion: Completion | None,
    error: LLMError | None,
    parsed: ParsedOutput | None = None,
) -> None:
    """Add one model request (what was sent, what came back or failed) to the turn record."""
    # An image's data URI is its type and size here: a trace records sizes, not pixels.
    entry: RequestEntry = {"round": round_no, "messages": without_pixels(messages)}
    if completion is not None:
        entry.update(
            runner=completion.runner,
            model=completion.model,
            elapsed_s=round(completion.elapsed_s, 4),
            usage=completion.usage.as_dict(),
            text=completion.text,
            reasoning=completion.reasoning,
            response=completion.raw,
        )
    if parsed is not None:
        entry["parsed"] = {
            "calls": [{"skill": c.skill, "args": c.args, "args_error": c.args_error} for c in parsed.calls],
            "reply": parsed.reply,
        }
        entry["recovered"] = list(parsed.recovered)
    if error is not None and turn.stop.is_set():
        # The stop hung the call up (as its deadline would): not the server's failure, whatever the cut looked like.
        entry.update(
            runner=error.runner,
            model=error.model,
            error={"kind": "stopped", "status": None, "message": turn.stop.why or "stopped by the owner"},
        )
    elif error is not None:
        entry.update(
            runner=error.runner,
            model=error.model,
            error={"kind": error.kind, "status": error.status, "message": error.user_message()},
        )
    turn.requests.append(entry)


def answered(request: RequestEntry) -> bool:
    """Whether a request of the turn record was answered (a failed one names its model too, for /stats)."""
    return bool(request.get("model")) and not request.get("error")


def steered_trace(box: SteerBox) -> list[JsonObject]:
    """Where each message added to the running turn entered: the round whose request first carried it."""
    return [{"round": one.round, "message_id": one.message_id, "text": one.text} for one in box.taken()]


def trace_of(turn: TurnRecord, result: TurnResult) -> TraceRecord:
    """The trace document of a finished turn."""
    last: RequestEntry = next((r for r in reversed(turn.requests) if answered(r)), {})
    return {
        "id": turn.trace_id,
        "conversation": turn.conversation_id,
        "time": turn.now.isoformat(timespec="seconds"),
        "ok": result.ok,
        "runner": last.get("runner"),
        "model": last.get("model"),
        **({"chosen_runner": turn.chosen_runner} if turn.chosen_runner else {}),
        **({"steered": steered_trace(turn.steer)} if turn.steer is not None and steered_trace(turn.steer) else {}),
        "rounds": result.rounds,
        "elapsed_s": round(result.elapsed_s, 4),
        "model_s": round(result.model_s, 4),
        "usage": result.usage,
        "section_sizes": turn.sizes,
        "recalled": turn.recalled,
        "user_text": turn.text,
        "reply": result.reply,
        "skill_calls": [call.as_dict() for call in turn.skill_calls],
        "error": turn.error,
        **({"job": turn.job} if turn.job else {}),
        "requests": turn.requests,
    }
