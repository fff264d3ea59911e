"""``jobs/runs.jsonl``, the jobs' runs: one line per run (or per planned runs let go), and a run's one id."""

from __future__ import annotations

from datetime import date, datetime
from typing import TypedDict, cast
from zoneinfo import ZoneInfo

from assistant_framework.schedules import as_utc, from_iso
from assistant_framework.workspace import LogCap, Workspace

RUNS_FILE = "jobs/runs.jsonl"
#: runs.jsonl is cut to its newest lines past this many bytes (read in full for /now and the page).
RUNS_CAP = LogCap(max_bytes=2 * 1024 * 1024, keep_lines=5000)


class RunLine(TypedDict, total=False):
    """One line of ``jobs/runs.jsonl``: a run (planned, started, finished, its outcome), or planned runs let go
    (``"outcome": "skipped"``, with ``count`` and ``reason``). Read back key by key (a hand-edited line may lack
    any)."""

    run: str  # the run's one id (``run_id``)
    job: str
    name: str
    kind: str  # "message" | "prompt"
    planned: str | None
    started: str
    finished: str
    outcome: str  # "delivered" | "failed" | "skipped" | ...
    late: bool
    requested: bool  # run now by the owner, not by its schedule
    message_ids: list[int]
    error: str
    first_planned: str  # skipped: the first of the runs let go
    count: int  # skipped: how many
    count_is_a_floor: bool
    reason: str


class RunLog:
    """``jobs/runs.jsonl``: one line per run (planned, started, finished, message ids or error), or per
    planned runs let go (``"outcome": "skipped"``)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def append(self, record: RunLine) -> None:
        """Append a line; the file is cut to its newest lines once it grows past ``RUNS_CAP``."""
        self.workspace.append_jsonl(RUNS_FILE, record, RUNS_CAP)

    def records(self) -> list[RunLine]:
        """Every readable line, oldest first (a torn or hand-broken line is skipped)."""
        return cast(list[RunLine], self.workspace.read_jsonl(RUNS_FILE))  # JSON objects, read key by key

    def has_run(self, run_id: str) -> bool:
        """True when a run with this id has its line already (a replay after a crash must not add one)."""
        return any(record.get("run") == run_id for record in self.records())

    def for_job(self, job_id: str, limit: int = 20) -> list[RunLine]:
        """The newest ``limit`` lines of one job, oldest first."""
        return [record for record in self.records() if record.get("job") == job_id][-limit:]

    def on_day(self, day: date, tz: ZoneInfo) -> list[RunLine]:
        """The lines of runs planned on local ``day``."""
        out = []
        for record in self.records():
            planned = from_iso(record.get("planned"))
            if planned is not None and planned.astimezone(tz).date() == day:
                out.append(record)
        return out

    def model_runs_on(self, day: date, tz: ZoneInfo) -> int:
        """Prompt-job runs started on local ``day`` (for ``jobs.max_model_runs_per_day``)."""
        count = 0
        for record in self.records():
            started = from_iso(record.get("started"))
            if record.get("kind") == "prompt" and started is not None and started.astimezone(tz).date() == day:
                count += 1
        return count


def run_id(job_id: str, planned: datetime) -> str:
    """The one id of a job's run at a planned time: the inbox accepts each once, so it runs once."""
    return f"job:{job_id}:{as_utc(planned).strftime('%Y%m%dT%H%M%SZ')}"
