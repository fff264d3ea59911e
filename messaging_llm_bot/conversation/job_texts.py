"""What /jobs and the /now digest say about scheduled jobs (no model call, files only)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from assistant_framework.config.settings.jobs import JobsSettings
from assistant_framework.hints import CLI
from assistant_framework.jobs import JobStore, RunLog, describe_next
from assistant_framework.schedules import from_iso
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.markup import escape_markdown
from messaging_llm_bot.conversation.reminders import FROM_OUTSIDE

#: Jobs /jobs lists at most (the rest: `assistant jobs list`).
SHOWN_JOBS = 30
#: Rows that do not run /jobs names at most (each is a sentence with the fix).
SHOWN_PROBLEMS = 10


def jobs_text(workspace: Workspace, now: datetime, timezone: str, limits: JobsSettings) -> str:
    """/jobs: every job with its schedule and next run, and the rows that cannot be read or are past the limits."""
    jobs, problems = JobStore(workspace, timezone, limits).jobs()
    if not jobs and not problems:
        return "🗓 No jobs yet. Ask me, e.g. “every weekday at 7:30 tell me the weather”."
    lines = ["🗓 **Jobs**"]
    for job in jobs[:SHOWN_JOBS]:
        outside = f" {FROM_OUTSIDE}" if job.untrusted else ""
        failing = f", {job.failures} failed in a row" if job.failures else ""
        lines.append(
            f"- {escape_markdown(job.id)} {escape_markdown(job.name)}: {escape_markdown(job.schedule.describe())}, "
            f"{job.kind}; next {escape_markdown(describe_next(job, now))}{failing}{outside}"
        )
    if len(jobs) > SHOWN_JOBS:
        lines.append(f"… and {len(jobs) - SHOWN_JOBS} more: `{CLI} jobs list`")
    for problem in problems[:SHOWN_PROBLEMS]:
        lines.append(f"⚠️ {escape_markdown(problem)}")
    if len(problems) > SHOWN_PROBLEMS:
        lines.append(f"⚠️ … and {len(problems) - SHOWN_PROBLEMS} more rows that do not run: `{CLI} jobs list`")
    return "\n".join(lines)


def jobs_today(workspace: Workspace, local_now: datetime) -> str:
    """The /now section: today's runs so far (with their outcome) and the runs still to come today."""
    tz = local_now.tzinfo if isinstance(local_now.tzinfo, ZoneInfo) else ZoneInfo("UTC")
    today = local_now.date()
    rows: list[tuple[datetime, str]] = []
    for record in RunLog(workspace).on_day(today, tz):
        planned = from_iso(record.get("planned"))
        if planned is None:
            continue
        outcome = str(record.get("outcome") or "?")
        started = from_iso(record.get("started"))
        late = f", late: run {started.astimezone(tz).strftime('%H:%M')}" if record.get("late") and started else ""
        rows.append((planned, f"{escape_markdown(str(record.get('name') or record.get('job')))}: {outcome}{late}"))
    jobs, _problems = JobStore(workspace, str(tz)).jobs()
    for job in jobs:
        upcoming = job.next_run(local_now)
        if upcoming is not None and upcoming.astimezone(tz).date() == today:
            rows.append((upcoming, f"{escape_markdown(job.name)}: next"))
    if not rows:
        return ""
    rows.sort(key=lambda row: row[0])
    return "\n".join(
        ["🗓 **Jobs today**", *[f"- {when.astimezone(tz).strftime('%H:%M')} {text}" for when, text in rows]]
    )
