"""Jobs the assistant schedules: a job read from its row and how it is shown (``job``), the jobs' file
(``store``), the runs' log (``runs``) and when they run (``schedule``).

The frontends' scheduler (messaging_llm_bot/conversation/job_runs.py) puts each due run into the durable
inbox; docs/jobs.md describes the whole.
"""

from assistant_framework.jobs.job import Job, JobError, JobRow, as_row, describe_next
from assistant_framework.jobs.runs import RUNS_FILE, RunLine, RunLog, run_id
from assistant_framework.jobs.schedule import CATCH_UP, Due, Schedule, due_runs
from assistant_framework.jobs.store import JOBS_FILE, PAUSE_AFTER_FAILURES, JobStore

__all__ = [
    "CATCH_UP",
    "JOBS_FILE",
    "PAUSE_AFTER_FAILURES",
    "RUNS_FILE",
    "Due",
    "Job",
    "JobError",
    "JobRow",
    "JobStore",
    "RunLine",
    "RunLog",
    "Schedule",
    "as_row",
    "describe_next",
    "due_runs",
    "run_id",
]
