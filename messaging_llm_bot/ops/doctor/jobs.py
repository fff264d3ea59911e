"""The doctor's jobs check: every row of ``jobs/jobs.json`` can be planned; the ones that cannot are named
(they do not run; the others do)."""

from __future__ import annotations

from assistant_framework.hints import CLI
from assistant_framework.workspace import WORKSPACE_MARKER
from messaging_llm_bot.ops.channels.doctor import OK, WARN, Check, Context

#: Problems shown in the check's one line (the rest: `assistant jobs list`).
SHOWN = 3


def check_jobs(ctx: Context) -> list[Check]:
    """OK with the count of jobs, or WARN naming the rows that do not run and why."""
    from assistant_framework.jobs import JOBS_FILE, JobStore
    from assistant_framework.workspace import Workspace

    if not (ctx.workspace_path / WORKSPACE_MARKER).is_dir():
        return []
    settings = ctx.settings
    jobs, problems = JobStore(Workspace(ctx.workspace_path), settings.runtime.timezone, settings.jobs).jobs()
    if not problems:
        return [Check("jobs", OK, f"{len(jobs)} job(s) in {JOBS_FILE}" if jobs else "no jobs")]
    shown = "; ".join(problems[:SHOWN]) + (f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else "")
    return [
        Check(
            "jobs",
            WARN,
            f"{len(problems)} row(s) do not run ({len(jobs)} job(s) do): {shown}",
            f"fix or remove those rows in {JOBS_FILE} (`{CLI} jobs list` names them all)",
        )
    ]
