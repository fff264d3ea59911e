"""The jobs' limits where runs are planned, not only in the skill: a file written by hand, by ``file`` or by an
older version holds what the skill would refuse. The first ``jobs.max_jobs`` readable rows run, the rest do
not; a ``prompt`` job whose schedule runs more often than ``jobs.min_prompt_interval_minutes`` does not run.
Each is named as a problem (``/jobs``, ``doctor``, the web page, and once to the owner by the scheduler).
(``jobs.max_model_runs_per_day`` is counted where a run is made: conversation/job_runs.py.)"""

from __future__ import annotations

from datetime import datetime, timedelta

from assistant_framework.config.settings.jobs import JobsSettings
from assistant_framework.jobs.job import Job
from assistant_framework.jobs.schedule import shortest_gap

#: Ids named in the one problem for the rows over ``jobs.max_jobs`` (the rest are counted).
SHOWN_IDS = 5


def too_often(job: Job, limits: JobsSettings, now: datetime) -> str | None:
    """Why a ``prompt`` job runs more often than the minimum allows, or None."""
    if job.kind != "prompt":
        return None
    gap = shortest_gap(job.schedule, now)
    least = timedelta(minutes=limits.min_prompt_interval_minutes)
    if gap is None or gap >= least:
        return None
    minutes = int(gap.total_seconds() // 60)
    return (
        f"a prompt job runs at most every {limits.min_prompt_interval_minutes} minutes "
        f"(jobs.min_prompt_interval_minutes) and this one every {minutes} minute(s)"
    )


def within_limits(jobs: list[Job], limits: JobsSettings, now: datetime, where: str) -> tuple[list[Job], list[str]]:
    """The jobs that may run, and one sentence per limit a row breaks (``where``: the file, for the sentence)."""
    kept, over = jobs[: limits.max_jobs], jobs[limits.max_jobs :]
    problems = []
    if over:
        ids = ", ".join(job.id for job in over[:SHOWN_IDS]) + (", ..." if len(over) > SHOWN_IDS else "")
        problems.append(
            f"{where}: {len(over)} job(s) past jobs.max_jobs ({limits.max_jobs}) do not run ({ids}); "
            "remove jobs or raise the limit"
        )
    runnable = []
    for job in kept:
        why = too_often(job, limits, now)
        if why is None:
            runnable.append(job)
        else:
            problems.append(
                f"{where}: job {job.id} {job.name[:60]!r}: {why}: it does not run until its schedule is longer"
            )
    return runnable, problems
