"""Scoring one eval case from what the model did: pure, no I/O."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

from ..json_types import JsonObject
from .cases import EvalCase
from .matchers import check


@dataclass
class CallRecord:
    """One skill call the model made, and how the skill manager answered it."""

    skill: str
    args: Any
    ok: bool
    error_kind: str | None = None  # "unknown_skill" | "invalid_args" | ...


@dataclass
class CaseResult:
    id: str
    category: str
    passed: bool
    chose_right_skill: bool | None  # None for no-skill cases
    args_valid: bool | None
    args_correct: bool | None
    repair_round: bool
    no_skill_ok: bool | None  # only for no-skill cases
    calls: list[JsonObject] = field(default_factory=list)
    reply: str = ""
    problems: list[str] = field(default_factory=list)
    latency_s: float = 0.0
    tokens: int | None = None
    rounds: int = 0
    error: str | None = None

    def as_dict(self) -> JsonObject:
        return asdict(self)


def score_case(
    case: EvalCase,
    calls: list[CallRecord],
    reply: str,
    *,
    today: date,
    latency_s: float = 0.0,
    tokens: int | None = None,
    rounds: int = 0,
    error: str | None = None,
) -> CaseResult:
    """Judge a run: right skill, valid and correct arguments, chain order, no call when none is due."""
    expected = case.expected_skills
    problems: list[str] = []
    result = CaseResult(
        id=case.id,
        category=case.category,
        passed=False,
        chose_right_skill=None,
        args_valid=None,
        args_correct=None,
        repair_round=False,
        no_skill_ok=None,
        calls=[{"skill": c.skill, "args": c.args, "ok": c.ok, "error_kind": c.error_kind} for c in calls],
        reply=reply,
        latency_s=latency_s,
        tokens=tokens,
        rounds=rounds,
        error=error,
    )
    if error:
        problems.append(f"run failed: {error}")
    if case.allows_no_call and not calls:
        result.no_skill_ok = bool(reply.strip())
    elif not expected:
        result.no_skill_ok = not calls and bool(reply.strip())
        if calls:
            problems.append(f"expected no skill call, got {[c.skill for c in calls]}")
    else:
        problems.extend(_judge_skill_calls(case, calls, result, today))
    chain = case.expect.get("chain")
    if chain and not _is_subsequence(chain, [c.skill for c in calls if c.ok]):
        problems.append(f"expected the calls {chain} in order, got {[c.skill for c in calls]}")
    if "reply" in case.expect:
        reply_problem = check(case.expect["reply"], reply, today=today)
        if reply_problem:
            problems.append(f"reply: {reply_problem}")
    if not reply.strip():
        problems.append("empty reply")
    result.problems = problems
    result.passed = not problems
    return result


def _judge_skill_calls(case: EvalCase, calls: list[CallRecord], result: CaseResult, today: date) -> list[str]:
    """When a skill is due: was the right one called first, with valid and correct arguments (after a repair
    round, if any)? Sets those marks on ``result``; the problems found."""
    expected = case.expected_skills
    problems: list[str] = []
    mine = [c for c in calls if c.skill in expected]
    result.chose_right_skill = bool(mine) and calls[0].skill in expected
    wanted = " or ".join(repr(name) for name in expected)
    if not mine:
        problems.append(f"expected a call of {wanted}, got {[c.skill for c in calls] or 'none'}")
    elif calls[0].skill not in expected:
        problems.append(f"first call was {calls[0].skill!r}, expected {wanted}")
    if mine:
        result.args_valid = mine[0].error_kind != "invalid_args"
        failed_first = any(c.error_kind in ("invalid_args", "unknown_skill") for c in calls[: calls.index(mine[-1])])
        good = [c for c in mine if c.ok]
        result.repair_round = failed_first and bool(good)
        final = good[-1] if good else mine[-1]
        arg_problems = _check_args(case.expect.get("args") or {}, final.args, today)
        result.args_correct = not arg_problems and bool(good)
        if not good:
            problems.append(f"no successful call of {wanted}")
        problems.extend(arg_problems)
    return problems


def _check_args(expectations: JsonObject, args: object, today: date) -> list[str]:
    if not isinstance(args, dict):
        return [f"args are not an object: {args!r}"]
    problems = []
    for key, expected in expectations.items():
        actual = _lookup(args, key)
        problem = check(expected, actual, today=today)
        if problem:
            problems.append(f"args.{key}: {problem}")
    return problems


def _lookup(args: JsonObject, dotted: str) -> object:
    node: Any = args
    for part in dotted.split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _is_subsequence(wanted: list[str], got: list[str]) -> bool:
    it = iter(got)
    return all(any(g == w for g in it) for w in wanted)
