"""What each model runner used today and this month, as the ledger counted it (``/stats`` and
``assistant usage``): tokens, the cost from the runner's ``price``, and whether the counts are estimated (a
server that reports no usage, such as a llama.cpp server without it, is counted from the text)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from assistant_framework.config.settings import RunnerSettings
from assistant_framework.spending.ledger import DAY, MONTH, PeriodKeys, RunnerCounts, SpendingLedger


@dataclass(frozen=True)
class PeriodUsage:
    """One runner's use in one period (a day ``YYYY-MM-DD`` or a month ``YYYY-MM``)."""

    period: str
    tokens: int
    #: None: the runner has no ``price``, so no cost is counted.
    cost: float | None
    #: Some of the tokens were estimated from the text: the server reported no usage.
    estimated: bool


@dataclass(frozen=True)
class RunnerUsage:
    """One configured runner's use today and this month."""

    runner: str
    model: str
    today: PeriodUsage
    month: PeriodUsage


def runner_usage(ledger: SpendingLedger, runners: Sequence[RunnerSettings]) -> list[RunnerUsage]:
    """Every runner's counts of the current day and month (zero for one not asked yet)."""
    rows = []
    for runner in runners:
        counts = ledger.used(runner.name)
        priced = bool(runner.price.input_per_mtok or runner.price.output_per_mtok)
        today, month = (_period(counts, keys, priced) for keys in (DAY, MONTH))
        rows.append(RunnerUsage(runner.name, runner.model, today, month))
    return rows


def _period(counts: RunnerCounts, keys: PeriodKeys, priced: bool) -> PeriodUsage:
    """One period (the day or the month) of a runner's counts in the ledger."""
    return PeriodUsage(
        str(counts.get(keys.period) or ""),
        int(counts.get(keys.tokens) or 0),
        round(float(counts.get(keys.cost) or 0.0), 6) if priced else None,
        bool(counts.get(keys.estimated)),
    )


class PeriodUsageJson(TypedDict):
    """A ``PeriodUsage`` in ``assistant usage --json``."""

    period: str
    tokens: int
    cost: float | None
    estimated: bool


class RunnerUsageJson(TypedDict):
    """A ``RunnerUsage`` in ``assistant usage --json``."""

    runner: str
    model: str
    today: PeriodUsageJson
    month: PeriodUsageJson


def _period_json(use: PeriodUsage) -> PeriodUsageJson:
    return {"period": use.period, "tokens": use.tokens, "cost": use.cost, "estimated": use.estimated}


def usage_json(rows: Sequence[RunnerUsage]) -> list[RunnerUsageJson]:
    """The rows as JSON objects (``today`` and ``month``: ``period``, ``tokens``, ``cost``, ``estimated``)."""
    return [
        {"runner": row.runner, "model": row.model, "today": _period_json(row.today), "month": _period_json(row.month)}
        for row in rows
    ]


def _money(value: float) -> str:
    return f"{value:.2f}" if value >= 1 or value == 0 else f"{value:.4f}"


def _period_text(label: str, use: PeriodUsage) -> str:
    text = f"{label} {use.tokens:,} tokens"
    if use.cost is not None:
        text += f", cost {_money(use.cost)}"
    return text + (" (estimated: the server reports no usage)" if use.estimated else "")


def usage_text(rows: Sequence[RunnerUsage]) -> str:
    """One line per runner: today's and this month's tokens (and cost), estimated ones marked (pure)."""
    if not rows:
        return "No model runner is configured (llm.runners)."
    lines = ["Per runner, today and this month:"]
    for row in rows:
        lines.append(
            f"- {row.runner} ({row.model}): {_period_text('today', row.today)}; {_period_text('this month', row.month)}"
        )
    return "\n".join(lines)
