"""Jobs the assistant schedules: their files (``store``) and when they run (``schedule``).

The frontends' scheduler (messaging_llm_bot/frontends/job_runs.py) puts each due run into the durable
inbox; docs/jobs.md describes the whole.
"""

from assistant_framework.jobs.schedule import CATCH_UP, Due, Schedule, due_runs
from assistant_framework.jobs.store import (
    JOBS_FILE,
    PAUSE_AFTER_FAILURES,
    RUNS_FILE,
    Job,
    JobError,
    JobStore,
    RunLog,
    as_row,
    describe_next,
    run_id,
)

__all__ = [
    "CATCH_UP",
    "Due",
    "JOBS_FILE",
    "Job",
    "JobError",
    "JobStore",
    "PAUSE_AFTER_FAILURES",
    "RUNS_FILE",
    "RunLog",
    "Schedule",
    "as_row",
    "describe_next",
    "due_runs",
    "run_id",
]
