"""Replay recorded prompts against the current model, and turn traces into eval cases.

Before a change of model, prompt or skill description goes live, ``trace replay``
re-sends the user's own recorded requests and shows whether the model now picks
the same skill with the same arguments as it did then.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, TypedDict

from assistant_framework.json_types import JsonObject
from assistant_framework.traces import TraceRecord
from messaging_llm_bot.llm.client import LLMClient, LLMError
from messaging_llm_bot.protocol import parse_model_output


class ModelAction(TypedDict):
    """The comparable part of a parsed model output: the calls (skill and args), or that it replied."""

    calls: list[JsonObject]  # {"skill", "args"}
    reply: str | None


@dataclass
class ReplayOutcome:
    """One recorded request re-sent: what the model chose then and now."""

    trace_id: str
    round: int
    before: ModelAction
    now: ModelAction
    verdict: str  # "same" | "args differ" | "changed" | "error"
    error: str | None = None
    elapsed_s: float = 0.0
    extra: JsonObject = field(default_factory=dict)


def action_of(parsed: JsonObject | None) -> ModelAction:
    """The comparable part of a parsed model output: the calls, or that it replied."""
    parsed = parsed or {}
    calls = [{"skill": c.get("skill"), "args": c.get("args") or {}} for c in parsed.get("calls") or []]
    return ModelAction(calls=calls, reply=None if calls else (parsed.get("reply") or ""))


def compare_actions(before: ModelAction, now: ModelAction) -> str:
    """``same`` (same skills, same args, or both replied), ``args differ`` or ``changed``."""
    skills_before = [c["skill"] for c in before["calls"]]
    skills_now = [c["skill"] for c in now["calls"]]
    if skills_before != skills_now:
        return "changed"
    if [_normal(c["args"]) for c in before["calls"]] != [_normal(c["args"]) for c in now["calls"]]:
        return "args differ"
    return "same"


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str):
        return " ".join(value.split()).lower()
    return value


def replayable_requests(trace: TraceRecord, all_rounds: bool = False) -> list[JsonObject]:
    """The requests of a trace that reached the model and were parsed (the first only by default)."""
    requests = [r for r in trace.get("requests") or [] if r.get("parsed") is not None and r.get("messages")]
    return requests if all_rounds else requests[:1]


def replay_trace(
    trace: TraceRecord,
    llm: LLMClient,
    skill_names: Collection[str],
    *,
    system_prompt: str | None = None,
    all_rounds: bool = False,
) -> list[ReplayOutcome]:
    """Re-send a trace's recorded request(s); ``system_prompt`` replaces the recorded one when given."""
    outcomes = []
    for request in replayable_requests(trace, all_rounds):
        messages = copy.deepcopy(request["messages"])
        if system_prompt is not None and messages and messages[0].get("role") == "system":
            messages[0]["content"] = system_prompt
        before = action_of(request.get("parsed"))
        try:
            completion = llm.complete(messages)
        except LLMError as exc:
            outcomes.append(
                ReplayOutcome(
                    trace.get("id", "?"),
                    request.get("round", 1),
                    before,
                    {"calls": [], "reply": None},
                    "error",
                    error=exc.user_message(),
                )
            )
            continue
        parsed = parse_model_output(completion.text, skill_names)
        now = action_of({"calls": [{"skill": c.skill, "args": c.args} for c in parsed.calls], "reply": parsed.reply})
        outcomes.append(
            ReplayOutcome(
                trace.get("id", "?"),
                request.get("round", 1),
                before,
                now,
                compare_actions(before, now),
                elapsed_s=completion.elapsed_s,
            )
        )
    return outcomes


def describe_action(action: ModelAction, width: int = 70) -> str:
    """``tasks(action=add, due=2026-06-12)`` or ``reply: "..."`` for the replay table."""
    if action["calls"]:
        parts = []
        for call in action["calls"]:
            args = ", ".join(f"{k}={_short(v)}" for k, v in (call["args"] or {}).items())
            parts.append(f"{call['skill']}({args})")
        text = " -> ".join(parts)
    else:
        text = f"reply: {_short(action.get('reply') or '', 40)!s}"
    return text if len(text) <= width else text[: width - 1] + "…"


def _short(value: Any, limit: int = 24) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_replay(outcomes: list[ReplayOutcome]) -> str:
    """One line per replayed request, then the count of each verdict."""
    lines = []
    for o in outcomes:
        lines.append(f"{o.trace_id}  round {o.round}  {o.verdict.upper()}")
        lines.append(f"    before: {describe_action(o.before)}")
        lines.append(f"    now:    {describe_action(o.now) if o.verdict != 'error' else o.error}")
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "nothing to replay"
    lines.append(f"\n{len(outcomes)} request(s) replayed: {summary}")
    return "\n".join(lines)


def case_from_trace(trace: TraceRecord, *, category: str = "from_traces") -> JsonObject | None:
    """An eval case expecting what the trace's first request chose (None when it has nothing to offer)."""
    requests = replayable_requests(trace)
    user_text = trace.get("user_text")
    if not requests or not user_text:
        return None
    action = action_of(requests[0].get("parsed"))
    expect: JsonObject = {"skill": action["calls"][0]["skill"] if action["calls"] else None}
    if action["calls"]:
        args = {k: v for k, v in (action["calls"][0]["args"] or {}).items() if isinstance(v, (str, int, float, bool))}
        if args:
            expect["args"] = args
    case = {"id": f"trace-{trace.get('id', 'unknown')}", "category": category, "message": user_text, "expect": expect}
    if trace.get("time"):
        case["now"] = str(trace["time"])[:19]
    return case


def export_cases(
    traces: list[TraceRecord], *, category: str = "from_traces", keep: Callable[[TraceRecord], bool] | None = None
) -> list[JsonObject]:
    """Eval cases from chosen traces (failed turns and traces without a request are skipped)."""
    cases = []
    for trace in traces:
        if not trace.get("ok", True) or (keep and not keep(trace)):
            continue
        case = case_from_trace(trace, category=category)
        if case:
            cases.append(case)
    return cases
