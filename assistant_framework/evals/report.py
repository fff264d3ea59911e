"""Eval reports: the JSON shape, the per-category table, and two reports side by side."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import TypedDict

from ..json_types import JsonObject
from .scoring import CaseResult


class Summary(TypedDict):
    """A category's figures (or all cases'): rates are 0..1, None where no case measured them."""

    cases: int
    passed: int
    right_skill: float | None
    args_valid: float | None
    args_correct: float | None
    repair_rounds: int
    no_skill_ok: float | None
    median_latency_s: float | None
    median_tokens: int | None


class EvalReport(TypedDict):
    """What ``eval skills --report`` writes and ``--compare`` reads back."""

    model: str
    runner: str
    base_url: str
    cases: int
    passed: int
    by_category: dict[str, Summary]
    overall: Summary
    results: list[JsonObject]  # each case's CaseResult as a dict


def build_report(results: Iterable[CaseResult], *, model: str = "", runner: str = "", base_url: str = "") -> EvalReport:
    """``{"cases", "passed", "by_category": {name: {...}}, "results": [...]}`` plus the model used."""
    rows = list(results)
    by_category: dict[str, Summary] = {}
    for category in sorted({r.category for r in rows}):
        by_category[category] = _summary([r for r in rows if r.category == category])
    report: EvalReport = {
        "model": model,
        "runner": runner,
        "base_url": base_url,
        "cases": len(rows),
        "passed": sum(r.passed for r in rows),
        "by_category": by_category,
        "overall": _summary(rows),
        "results": [r.as_dict() for r in rows],
    }
    return report


def _rate(values: list[bool | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known), 3) if known else None


def _summary(rows: list[CaseResult]) -> Summary:
    latencies = [r.latency_s for r in rows]
    tokens = [r.tokens for r in rows if r.tokens is not None]
    return {
        "cases": len(rows),
        "passed": sum(r.passed for r in rows),
        "right_skill": _rate([r.chose_right_skill for r in rows]),
        "args_valid": _rate([r.args_valid for r in rows]),
        "args_correct": _rate([r.args_correct for r in rows]),
        "repair_rounds": sum(r.repair_round for r in rows),
        "no_skill_ok": _rate([r.no_skill_ok for r in rows]),
        "median_latency_s": round(statistics.median(latencies), 3) if latencies else None,
        "median_tokens": int(statistics.median(tokens)) if tokens else None,
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


COLUMNS = (
    "category",
    "cases",
    "passed",
    "right skill",
    "args valid",
    "args correct",
    "repairs",
    "no-skill ok",
    "median s",
    "median tok",
)


def _row(name: str, s: Summary) -> list[str]:
    return [
        name,
        str(s["cases"]),
        str(s["passed"]),
        _pct(s["right_skill"]),
        _pct(s["args_valid"]),
        _pct(s["args_correct"]),
        str(s["repair_rounds"]),
        _pct(s["no_skill_ok"]),
        "-" if s["median_latency_s"] is None else f"{s['median_latency_s']:.2f}",
        "-" if s["median_tokens"] is None else str(s["median_tokens"]),
    ]


def format_table(report: EvalReport) -> str:
    """The per-category table, then the overall line and the failed case ids."""
    rows = [list(COLUMNS)] + [_row(name, s) for name, s in report["by_category"].items()]
    rows.append(_row("overall", report["overall"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(r)) for r in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    head = (
        f"model {report.get('model') or '?'} via {report.get('runner') or '?'}: "
        f"{report['passed']}/{report['cases']} passed"
    )
    failed = [r for r in report["results"] if not r["passed"]]
    tail = [""] + [f"FAIL {r['id']}: {'; '.join(r['problems'])[:200]}" for r in failed] if failed else []
    return "\n".join([head, "", *lines, *tail])


def format_comparison(a: EvalReport, b: EvalReport, name_a: str = "A", name_b: str = "B") -> str:
    """Two reports side by side: passed per category, then the cases whose outcome changed."""
    categories = sorted(set(a["by_category"]) | set(b["by_category"]))
    header = ["category", f"{name_a} passed", f"{name_b} passed", "change"]
    rows = [header]
    for cat in [*categories, "overall"]:
        sa = a["overall"] if cat == "overall" else a["by_category"].get(cat)
        sb = b["overall"] if cat == "overall" else b["by_category"].get(cat)
        pa = f"{sa['passed']}/{sa['cases']}" if sa else "-"
        pb = f"{sb['passed']}/{sb['cases']}" if sb else "-"
        delta = (sb["passed"] if sb else 0) - (sa["passed"] if sa else 0)
        rows.append([cat, pa, pb, f"{delta:+d}"])
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)) for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    results_a = {r["id"]: r for r in a["results"]}
    results_b = {r["id"]: r for r in b["results"]}
    changed = []
    for case_id in sorted(set(results_a) & set(results_b)):
        ra, rb = results_a[case_id], results_b[case_id]
        if ra["passed"] != rb["passed"]:
            verdict = "fixed" if rb["passed"] else "broken"
            changed.append(f"{verdict:6} {case_id}")
    title = f"{name_a}: {a.get('model') or '?'}   {name_b}: {b.get('model') or '?'}"
    return "\n".join([title, "", *lines, *(["", *changed] if changed else [])])
