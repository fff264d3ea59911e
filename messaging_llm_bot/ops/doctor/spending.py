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
        elif row["percent"] >= BACKGROUND_SHARE * 100:
            fix = f"background work (facts, episodes, triage) waits for {when}; turns go on"
            checks.append(Check(name, WARN, f"{row['text']} ({row['percent']:.0f} %)", fix))
        else:
            checks.append(Check(name, OK, f"{row['text']} ({row['percent']:.0f} %), resets {when}"))
    return checks
