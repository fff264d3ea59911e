"""What each model runner used today and this month, as the ledger counted it (``/stats`` and
``assistant usage``): tokens, the cost from the runner's ``price``, and whether the counts are estimated (a
server that reports no usage, such as a llama.cpp server without it, is counted from the text)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from assistant_framework.config.settings import RunnerSettings
from assistant_framework.spending.ledger import SpendingLedger


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
        today, month = (_period(counts, name, priced) for name in ("day", "month"))
        rows.append(RunnerUsage(runner.name, runner.model, today, month))
    return rows


def _period(counts: dict[str, Any], name: str, priced: bool) -> PeriodUsage:
    """One period (``day`` or ``month``) of a runner's counts in the ledger."""
    return PeriodUsage(
        str(counts.get(name) or ""),
        int(counts.get(f"{name}_tokens") or 0),
        round(float(counts.get(f"{name}_cost") or 0.0), 6) if priced else None,
        bool(counts.get(f"{name}_estimated")),
    )


def usage_json(rows: Sequence[RunnerUsage]) -> list[dict[str, Any]]:
    """The rows as JSON objects (``today`` and ``month``: ``period``, ``tokens``, ``cost``, ``estimated``)."""
    return [asdict(row) for row in rows]


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
