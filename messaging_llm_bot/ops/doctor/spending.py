"""The doctor's spending check: each runner's caps, warned from 80 % and when reached."""

from __future__ import annotations

from collections.abc import Mapping

from assistant_framework.hints import CLI
from assistant_framework.workspace import WORKSPACE_MARKER
from messaging_llm_bot.ops.channels.doctor import OK, WARN, Check, Context


def check_spending(ctx: Context) -> list[Check]:
    """Each runner's spending caps: warn from 80 % (background work stops there), and when one is reached."""
    from assistant_framework.spending import BACKGROUND_SHARE, DEFAULT_ANSWER_TOKENS, SpendingLedger, cap_rows
    from assistant_framework.workspace import Workspace

    settings = ctx.settings
    capped = [r for r in settings.llm.runners if r.limits.any]
    checks = []
    unbounded = [r.name for r in capped if not _answer_bound(settings.llm.max_tokens, r.extra_body)]
    if unbounded:  # the estimate before a call bounds its answer only when the request does
        names = ", ".join(f"'{n}'" for n in unbounded)
        checks.append(
            Check(
                "spending caps bound",
                WARN,
                f"llm.max_tokens is null: an answer of {names} is estimated at {DEFAULT_ANSWER_TOKENS} tokens before "
                "the call, and a longer one passes a cap by the rest",
                f"set a bound: {CLI} config set llm.max_tokens 1200",
            )
        )
    if not capped or not (ctx.workspace_path / WORKSPACE_MARKER).is_dir():
        return checks
    ledger = SpendingLedger(Workspace(ctx.workspace_path), settings.runtime.timezone)
    for row in cap_rows(ledger, settings.llm.runners):
        when = row["resets"].replace("T", " ")
        name = f"spending cap {row['runner']}"
        if row["reached"]:
            fix = f"it answers again at {when}; raise llm.runners[].limits.{row['cap']} to use it sooner"
            checks.append(Check(name, WARN, f"{row['text']}: reached, the next runner answers", fix))
        elif row["refused"] or row["percent"] >= BACKGROUND_SHARE * 100:
            left = f"{row['left']:,.0f}" if row["cap"].endswith("tokens") else f"{row['left']:.2f}"
            held = f", {row['refused']} call(s) held back: they would have passed it" if row["refused"] else ""
            fix = f"turns that fit in the {left} left go on, larger ones to the next runner, until {when}"
            if row["percent"] >= BACKGROUND_SHARE * 100:
                fix += "; background work (facts, episodes, triage) waits"
            checks.append(Check(name, WARN, f"{row['text']} ({int(row['percent'])} %{held})", fix))
        else:
            checks.append(Check(name, OK, f"{row['text']} ({int(row['percent'])} %), resets {when}"))
    return checks


def _answer_bound(max_tokens: int | None, extra_body: Mapping[str, object]) -> bool:
    """True when a runner's requests bound the answer (``llm.max_tokens``, or its own ``extra_body``)."""
    if "max_tokens" in extra_body or "max_completion_tokens" in extra_body:
        return any(isinstance(extra_body.get(k), int) for k in ("max_tokens", "max_completion_tokens"))
    return max_tokens is not None
