"""Eval case loading, expectation matchers, scoring and reports (pure parts)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from assistant_framework.evals.cases import CaseError, EvalCase, load_cases
from assistant_framework.evals.matchers import check, resolve_date
from assistant_framework.evals.report import build_report, format_comparison, format_table
from assistant_framework.evals.scoring import CallRecord, score_case

TODAY = date(2026, 6, 10)  # a Wednesday


def test_resolve_date() -> None:
    assert resolve_date("today", TODAY) == TODAY
    assert resolve_date("tomorrow", TODAY) == date(2026, 6, 11)
    assert resolve_date("next friday", TODAY) == date(2026, 6, 12)
    assert resolve_date("wednesday", TODAY) == date(2026, 6, 17)  # the next one, not today
    assert resolve_date("+2w", TODAY) == date(2026, 6, 24)
    assert resolve_date("2026-01-02", TODAY) == date(2026, 1, 2)


@pytest.mark.parametrize(
    "expected, actual, ok",
    [
        ("add", "ADD", True),
        ("add", "list", False),
        ({"endswith": "notes/groceries.md"}, "notes/groceries.md", True),
        ({"endswith": "notes/groceries.md"}, "notes/groceries.txt", False),
        ({"contains": ["eggs", "milk"]}, "Buy eggs and milk", True),
        ({"contains": ["eggs", "milk"]}, "Buy eggs", False),
        ({"date": "next friday"}, "2026-06-12", True),
        ({"date": "next friday"}, "2026-06-12T09:00", True),
        ({"date": "next friday"}, "2026-06-13", False),
        ({"one_of": ["open", "due"]}, "due", True),
        ({"matches": r"^\d{2}:\d{2}$"}, "07:30", True),
        ({"present": True}, None, False),
        ({"number": 30}, "30", True),
    ],
)
def test_matchers(expected, actual, ok) -> None:
    assert (check(expected, actual, today=TODAY) is None) is ok


def case(**overrides) -> EvalCase:
    base = dict(
        id="c1",
        category="tasks",
        message="remind",
        expect={"skill": "tasks", "args": {"action": "add", "due": {"date": "next friday"}}},
    )
    base.update(overrides)
    return EvalCase(**base)


def test_right_call_passes() -> None:
    result = score_case(
        case(), [CallRecord("tasks", {"action": "add", "due": "2026-06-12"}, ok=True)], "Added.", today=TODAY
    )
    assert result.passed and result.chose_right_skill and result.args_valid and result.args_correct
    assert not result.repair_round


def test_repair_round_detected_and_still_passes() -> None:
    calls = [
        CallRecord("tasks", {"action": "add", "due": "friday"}, ok=False, error_kind="invalid_args"),
        CallRecord("tasks", {"action": "add", "due": "2026-06-12"}, ok=True),
    ]
    result = score_case(case(), calls, "Added.", today=TODAY)
    assert result.passed and result.repair_round and result.args_valid is False


def test_wrong_skill_and_wrong_args_fail_with_reasons() -> None:
    result = score_case(case(), [CallRecord("notes", {"action": "add"}, ok=True)], "ok", today=TODAY)
    assert not result.passed and result.chose_right_skill is False
    assert any("expected a call of 'tasks'" in p for p in result.problems)
    result = score_case(
        case(), [CallRecord("tasks", {"action": "add", "due": "2026-06-13"}, ok=True)], "ok", today=TODAY
    )
    assert not result.passed and result.args_correct is False
    assert any(p.startswith("args.due") for p in result.problems)


def test_no_skill_case() -> None:
    chit = case(id="c2", category="no_skill", expect={"skill": None})
    assert score_case(chit, [], "Hello!", today=TODAY).no_skill_ok is True
    bad = score_case(chit, [CallRecord("notes", {}, ok=True)], "Hello!", today=TODAY)
    assert not bad.passed and bad.no_skill_ok is False


def test_chain_order_and_alternative_skills() -> None:
    chain = case(id="c3", category="chain", expect={"skill": ["notes", "memory_search"], "chain": ["notes", "file"]})
    calls = [CallRecord("notes", {"action": "search"}, ok=True), CallRecord("file", {"action": "read"}, ok=True)]
    assert score_case(chain, calls, "It says X", today=TODAY).passed
    assert not score_case(chain, list(reversed(calls)), "It says X", today=TODAY).passed


def test_load_cases_from_json_and_yaml(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(
        json.dumps([{"id": "x1", "category": "c", "message": "m", "expect": {"skill": None}}])
    )
    (tmp_path / "b.yaml").write_text(
        "cases:\n  - id: x2\n    category: c\n    message: m\n    expect: {skill: notes}\n"
    )
    cases = load_cases([tmp_path])
    assert [c.id for c in cases] == ["x1", "x2"]
    (tmp_path / "c.yaml").write_text("id: x1\ncategory: c\nmessage: m\nexpect: {skill: null}\n")
    with pytest.raises(CaseError, match="already used"):
        load_cases([tmp_path])
    (tmp_path / "c.yaml").write_text("id: x3\ncategory: c\nexpect: {skill: null}\n")
    with pytest.raises(CaseError, match="'message' is a required property"):
        load_cases([tmp_path])


def test_report_shape_table_and_comparison() -> None:
    good = score_case(
        case(),
        [CallRecord("tasks", {"action": "add", "due": "2026-06-12"}, ok=True)],
        "ok",
        today=TODAY,
        latency_s=0.5,
        tokens=300,
    )
    bad = score_case(case(id="c9"), [], "I can't", today=TODAY, latency_s=1.5, tokens=100)
    report_a = build_report([good, bad], model="m-a")
    assert report_a["cases"] == 2 and report_a["passed"] == 1
    assert report_a["by_category"]["tasks"] == {**report_a["by_category"]["tasks"], "cases": 2, "passed": 1}
    assert [r["id"] for r in report_a["results"]] == ["c1", "c9"]
    assert json.loads(json.dumps(report_a)) == report_a
    table = format_table(report_a)
    assert "tasks" in table and "FAIL c9" in table and "1/2 passed" in table
    fixed = score_case(
        case(id="c9"), [CallRecord("tasks", {"action": "add", "due": "2026-06-12"}, ok=True)], "ok", today=TODAY
    )
    report_b = build_report([good, fixed], model="m-b")
    comparison = format_comparison(report_a, report_b)
    assert "fixed  c9" in comparison and "+1" in comparison


def test_skill_or_no_call_accepted() -> None:
    either = case(id="c4", category="time", expect={"skill": ["time", None], "reply": {"contains": "thursday"}})
    assert score_case(either, [], "It is a Thursday.", today=TODAY).passed
    assert score_case(either, [CallRecord("time", {"action": "weekday"}, ok=True)], "Thursday", today=TODAY).passed
    assert not score_case(either, [CallRecord("notes", {}, ok=True)], "Thursday", today=TODAY).passed
