"""The doctor's spending check: each runner's caps, warned from 80 % and when reached."""

from __future__ import annotations

from assistant_framework.workspace import WORKSPACE_MARKER
from messaging_llm_bot.ops.doctor.check import OK, WARN, Check, Context


def check_spending(ctx: Context) -> list[Check]:
    """Each runner's spending caps: warn from 80 % (background work stops there), and when one is reached."""
    from assistant_framework.config.settings import Settings
    from assistant_framework.spending import BACKGROUND_SHARE, SpendingLedger, cap_rows
    from assistant_framework.workspace import Workspace

    settings = Settings.from_config(ctx.config or {})
    if not any(r.limits.any for r in settings.llm.runners) or not (ctx.workspace_path / WORKSPACE_MARKER).is_dir():
        return []
    ledger = SpendingLedger(Workspace(ctx.workspace_path), settings.runtime.timezone)
    checks = []
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
