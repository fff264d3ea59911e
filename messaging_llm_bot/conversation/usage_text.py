"""/stats' text: each runner's use and spending caps from the running model client, then the traces' usage
over the last days. Pure builders plus the running bot's figures; ``commands.py`` dispatches /stats here and
``assistant usage`` prints the caps the same way."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from assistant_framework.spending.caps import CapRow
from assistant_framework.spending.usage import RunnerUsage, runner_usage, usage_text
from assistant_framework.traces import TraceStore, UsageRow, UsageStats
from assistant_framework.workspace import Workspace

if TYPE_CHECKING:  # pragma: no cover
    from messaging_llm_bot.conversation.runtime import Runtime


def format_stats(stats: UsageStats, days: int = 30) -> str:
    """/stats text from ``TraceStore.stats()`` output (pure)."""
    total = stats.get("total") or {}
    if not total.get("turns"):
        return f"No model usage recorded in the last {days} days."

    def row(label: str, r: UsageRow) -> str:
        cached = f", {r['cached_tokens']} cached" if r.get("cached_tokens") else ""
        if not r.get("prompt_tokens") and not r.get("completion_tokens"):
            # A server that reports no usage (llama.cpp without it): not "0 in, 0 out".
            tokens = "tokens not reported by the server"
        else:
            tokens = f"{r['prompt_tokens']} in{cached}, {r['completion_tokens']} out"
            if r.get("unreported"):  # the sums leave those calls out: not the whole count (Per runner estimates it)
                tokens += f" ({r['unreported']} of {r['requests']} calls not reported by the server)"
        return f"- {label}: {r['turns']} msgs, {tokens}, model {r['model_s']:.1f} s"

    lines = [f"Usage, last {days} days:", row("total", total), "", "Per model:"]
    lines += [row(model, r) for model, r in (stats.get("by_model") or {}).items()]
    lines += ["", "Per day:"]
    lines += [row(day, r) for day, r in (stats.get("by_day") or {}).items()]
    return "\n".join(lines)


def stats_text(
    workspace: Workspace,
    days: int = 30,
    now: datetime | None = None,
    caps: list[CapRow] | None = None,
    usage: Sequence[RunnerUsage] = (),
) -> str:
    """/stats: each runner's tokens and cost today and this month (``usage``, estimated ones marked), the runners'
    spending caps (``cap_rows``) when any, then the traces of the workspace over ``days``."""
    parts = [usage_text(usage)] if usage else []
    if caps:
        parts.append(caps_text(caps))
    parts.append(format_stats(TraceStore(workspace).stats(days=days, now=now), days))
    return "\n\n".join(parts)


def caps_text(caps: list[CapRow]) -> str:
    """The spending caps of /stats: per cap what is used, and when it resets (pure)."""
    lines = ["Spending caps:"]
    for row in caps:
        state = "reached" if row["reached"] else f"{int(row['percent'])} %"  # 99.7 % is not 100
        # Calls a turn did not send to the runner for this cap (reached, or they would have passed it).
        skipped = f"; {_calls(row['refused'])} held back by it" if row["refused"] else ""
        lines.append(f"- {row['runner']}: {row['text']} ({state}), resets {row['resets'].replace('T', ' ')}{skipped}")
    return "\n".join(lines)


def _calls(count: int) -> str:
    return "1 call" if count == 1 else f"{count} calls"


def runtime_stats(runtime: Runtime, conversation_id: str | None = None) -> str:
    """/stats of the running bot (every frontend's): the chat's model (its /model choice), its runners' use and
    caps, and the traces."""
    text = stats_text(runtime.workspace, caps=runtime_caps(runtime), usage=runtime_usage(runtime))
    if conversation_id is None:
        return text
    from messaging_llm_bot.conversation.model_choice import stats_line

    return f"{stats_line(runtime, conversation_id)}\n\n{text}"


def runtime_usage(runtime: Runtime) -> list[RunnerUsage]:
    """Each runner's counts of today and this month in the running model client's ledger."""
    llm = runtime.agent.llm
    return runner_usage(llm.spending, llm.runners) if llm.spending is not None else []


def runtime_caps(runtime: Runtime) -> list[CapRow]:
    """The cap rows of the running model client (none without caps)."""
    from assistant_framework.spending import cap_rows

    llm = runtime.agent.llm  # the client the turns use (a /reload swaps it, the counts go on)
    return cap_rows(llm.spending, llm.runners) if llm.spending is not None else []
