"""The jobs the assistant schedules: ``jobs/jobs.json`` (the jobs) and ``jobs/runs.jsonl`` (their runs).

Both are meant to be read and edited by hand. ``jobs.json`` is a list of objects; a row that cannot be
read (no schedule, two payloads, a bad cron) is reported with its id and skipped: it costs only itself.
The scheduler writes two fields into a row: ``last_planned`` (the newest planned run it has queued or let
go) and ``failures`` (failed runs in a row); ``paused`` is set after three of them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from assistant_framework.jobs.schedule import CATCH_UP, Schedule, check_cron, local_time
from assistant_framework.schedules import as_utc, from_iso, zone
from assistant_framework.stores._common import JsonListFile, NotFoundError, iso, now_utc, one_line
from assistant_framework.stores.provenance import is_untrusted, mark_record
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

JOBS_FILE = "jobs/jobs.json"
RUNS_FILE = "jobs/runs.jsonl"
SCHEDULE_KEYS = ("cron", "every_minutes", "at")
PAYLOAD_KEYS = ("message", "prompt")
#: Failed runs in a row after which a job is paused (and the owner told once).
PAUSE_AFTER_FAILURES = 3
#: The longest ``message`` or ``prompt`` kept (a job's text is sent, or is a model turn, at every run).
MAX_TEXT_CHARS = 4000
#: runs.jsonl is cut to its newest lines past this many bytes (read in full for /now and the page).
RUNS_MAX_BYTES = 2 * 1024 * 1024
RUNS_KEEP_LINES = 5000

EXAMPLES = {
    "cron": 'cron: five fields "minute hour day month weekday", e.g. "30 7 * * 1-5" (weekdays 07:30)',
    "every_minutes": "every_minutes: a whole number of minutes, e.g. 60",
    "at": 'at: one local time "YYYY-MM-DD HH:MM", e.g. "2026-12-24 09:00"',
}


class JobError(ValueError):
    """A job row or request that cannot be used; the message says what to fix, with an example."""


@dataclass(frozen=True)
class Job:
    """One readable row of ``jobs.json``."""

    id: str
    name: str
    schedule: Schedule
    message: str | None
    prompt: str | None
    catch_up: str
    paused: bool
    chat_id: int | str | None
    created_at: datetime
    last_planned: datetime | None
    failures: int
    untrusted: bool
    run_requested: str | None = None  # ``run_now``: the moment it was asked for, until the scheduler takes it

    @property
    def kind(self) -> str:
        return "prompt" if self.prompt is not None else "message"

    @property
    def text(self) -> str:
        return self.prompt if self.prompt is not None else (self.message or "")

    def next_run(self, now: datetime) -> datetime | None:
        """The next planned run after ``now`` (and after the last one made), or None (paused, done)."""
        if self.paused:
            return None
        after = max(as_utc(now), self.last_planned) if self.last_planned else as_utc(now)
        return self.schedule.next_after(after)


def schedule_of(row: dict, default_tz: str) -> Schedule:
    """The schedule a row names; JobError saying what to write when it names none or several."""
    given = [key for key in SCHEDULE_KEYS if row.get(key) not in (None, "")]
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        raise JobError(f"a job needs exactly one schedule, got {what}; use one of: " + "; ".join(EXAMPLES.values()))
    tz_name = str(row.get("timezone") or default_tz)
    try:
        zone(tz_name)
    except ValueError:
        raise JobError(f'timezone {tz_name!r} is not an IANA zone name; e.g. "Europe/Berlin" or "UTC"') from None
    key = given[0]
    anchor = from_iso(row.get("created_at"))
    if anchor is not None:  # whole seconds, as last_planned is stored: a run is never found due twice
        anchor = anchor.replace(microsecond=0)
    if key == "cron":
        try:
            check_cron(str(row["cron"]))
        except ValueError as err:
            raise JobError(f"{err}; {EXAMPLES['cron']}") from None
        return Schedule("cron", tz_name, cron=" ".join(str(row["cron"]).split()), anchor=anchor)
    if key == "every_minutes":
        minutes = row["every_minutes"]
        if isinstance(minutes, str) and minutes.strip().isdigit():
            minutes = int(minutes)
        if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes < 1 or minutes > 366 * 24 * 60:
            raise JobError(
                f"every_minutes {minutes!r} is not a whole number from 1 to 527040; {EXAMPLES['every_minutes']}"
            )
        return Schedule("every", tz_name, minutes=minutes, anchor=anchor)
    try:
        at = local_time(str(row["at"]), ZoneInfo(tz_name))
    except ValueError:
        raise JobError(f"at {row['at']!r} is not a date and time; {EXAMPLES['at']}") from None
    return Schedule("at", tz_name, at=at, anchor=anchor)


def job_of(row: dict, default_tz: str) -> Job:
    """A readable job from a row; JobError naming the row and what is wrong."""
    job_id = str(row.get("id") or "").strip()
    if not job_id:
        raise JobError("a job row has no id")
    payloads = [key for key in PAYLOAD_KEYS if isinstance(row.get(key), str) and row[key].strip()]
    if len(payloads) != 1:
        raise JobError(
            'a job needs exactly one of message (text sent as it is, e.g. "Take out the bins") or prompt '
            '(a request the assistant answers at each run, e.g. "Summarise my unread mail")'
        )
    catch_up = str(row.get("catch_up") or "once")
    if catch_up not in CATCH_UP:
        raise JobError(f"catch_up {catch_up!r} must be one of {', '.join(CATCH_UP)}")
    schedule = schedule_of(row, default_tz)
    created = (from_iso(row.get("created_at")) or now_utc()).replace(microsecond=0)
    if schedule.anchor is None:
        schedule = Schedule(schedule.kind, schedule.tz, schedule.cron, schedule.minutes, schedule.at, created)
    failures = row.get("failures")
    return Job(
        id=job_id,
        name=one_line(row.get("name")) or job_id,
        schedule=schedule,
        message=row["message"] if payloads[0] == "message" else None,
        prompt=row["prompt"] if payloads[0] == "prompt" else None,
        catch_up=catch_up,
        paused=bool(row.get("paused")),
        chat_id=row.get("chat_id"),
        created_at=created,
        last_planned=from_iso(row.get("last_planned")),
        failures=failures if isinstance(failures, int) and not isinstance(failures, bool) else 0,
        untrusted=is_untrusted(row),
        run_requested=str(row["run_requested"]) if row.get("run_requested") else None,
    )


#: Problems already logged, so a broken row is reported once, not at every look.
_reported: set[str] = set()


class JobStore:
    """``jobs/jobs.json`` under the workspace lock; every reader gets the readable jobs and the problems."""

    def __init__(self, workspace: Workspace, default_tz: str = "UTC") -> None:
        self.workspace = workspace
        self.default_tz = default_tz
        self.file = JsonListFile(workspace, JOBS_FILE)

    def rows(self) -> list[dict]:
        """The rows as they are in the file (objects only)."""
        return self.file.load()

    def jobs(self) -> tuple[list[Job], list[str]]:
        """The readable jobs, and one sentence per row that is not (logged once each)."""
        try:
            rows = self.rows()
        except ValueError as err:  # not a JSON list at all: nothing runs, and the owner is told why
            problems = [f"{JOBS_FILE}: {err}"]
            self._report(problems)
            return [], problems
        jobs, problems, seen = [], [], set()
        for index, row in enumerate(rows):
            try:
                job = job_of(row, self.default_tz)
            except JobError as err:
                problems.append(f"{JOBS_FILE} row {index} ({row.get('id') or 'no id'}): {err}")
                continue
            if job.id in seen:
                problems.append(f"{JOBS_FILE} row {index}: id {job.id!r} is used twice; only the first runs")
                continue
            seen.add(job.id)
            jobs.append(job)
        self._report(problems)
        return jobs, problems

    @staticmethod
    def _report(problems: list[str]) -> None:
        for problem in problems:
            if problem not in _reported:
                _reported.add(problem)
                log.warning("jobs: %s; the other jobs run", problem)

    def get(self, query: str) -> Job:
        """The job with this id, else the one with this name (case-insensitive); NotFoundError listing them."""
        jobs, _ = self.jobs()
        wanted = str(query or "").strip()
        for job in jobs:
            if job.id == wanted:
                return job
        named = [job for job in jobs if job.name.casefold() == wanted.casefold()]
        if len(named) == 1:
            return named[0]
        known = ", ".join(f"{job.id} ({job.name})" for job in jobs[:20]) or "none"
        raise NotFoundError(f"no job {query!r}; the jobs are: {known}")

    def add(
        self, fields: dict, *, untrusted: bool = False, max_jobs: int | None = None, now: datetime | None = None
    ) -> Job:
        """Store a new job from ``fields`` (checked as a row first); its id is returned in the Job."""
        row = {key: value for key, value in fields.items() if value not in (None, "")}
        for key in PAYLOAD_KEYS:
            if key in row:
                row[key] = str(row[key]).strip()
                if len(row[key]) > MAX_TEXT_CHARS:
                    raise JobError(f"{key} is {len(row[key])} characters; at most {MAX_TEXT_CHARS}")
        row.setdefault("catch_up", "once")
        row["created_at"] = iso(as_utc(now or now_utc()))
        row["paused"] = False
        if untrusted:
            mark_record(row)
        with self.file.edit() as rows:
            if max_jobs is not None and len(rows) >= max_jobs:
                raise JobError(
                    f"there are already {len(rows)} jobs, the most jobs.max_jobs allows; remove one first "
                    '(action "remove" with its id)'
                )
            row = {"id": self.file.allocate_id(rows, "j"), **row}
            job = job_of(row, self.default_tz)
            rows.append(row)
        return job

    def update(self, job_id: str, changes: dict, now: datetime | None = None) -> Job:
        """Change fields of a job (a new schedule replaces the old one, a new payload the old one)."""
        with self.file.edit() as rows:
            row = _row(rows, job_id)
            new = dict(row)
            if any(changes.get(key) not in (None, "") for key in SCHEDULE_KEYS):
                for key in SCHEDULE_KEYS:
                    new.pop(key, None)
                new.pop("last_planned", None)  # a new schedule starts from now
                new["created_at"] = iso(as_utc(now or now_utc()))
            if any(changes.get(key) not in (None, "") for key in PAYLOAD_KEYS):
                for key in PAYLOAD_KEYS:
                    new.pop(key, None)
            for key, value in changes.items():
                if value not in (None, ""):
                    new[key] = value
            job = job_of(new, self.default_tz)
            row.clear()
            row.update(new)
        return job

    def set_paused(self, job_id: str, paused: bool, now: datetime | None = None) -> Job:
        """Pause or resume; a resumed job starts again from now (runs missed while paused are not made)."""
        with self.file.edit() as rows:
            row = _row(rows, job_id)
            row["paused"] = paused
            if not paused:
                row["failures"] = 0
                row["last_planned"] = iso(as_utc(now or now_utc()))
            job = job_of(row, self.default_tz)
        return job

    def remove(self, job_id: str) -> dict:
        """Delete a job row and return it."""
        with self.file.edit() as rows:
            row = _row(rows, job_id)
            rows.remove(row)
        return row

    def request_run(self, job_id: str, at: datetime) -> Job:
        """Ask for one run now (``run_now``): the scheduler makes it at its next look."""
        with self.file.edit() as rows:
            row = _row(rows, job_id)
            row["run_requested"] = iso(at)
            job = job_of(row, self.default_tz)
        return job

    def mark(self, job_id: str, planned: datetime | None, *, clear_request: str | None = None) -> None:
        """Record the newest planned run queued or let go (and that a ``run_now`` request was taken)."""
        with self.file.edit() as rows:
            try:
                row = _row(rows, job_id)
            except NotFoundError:
                return  # removed meanwhile
            if planned is not None:
                current = from_iso(row.get("last_planned"))
                if current is None or as_utc(planned) > current:
                    row["last_planned"] = iso(as_utc(planned))
            if clear_request is not None and row.get("run_requested") == clear_request:
                row.pop("run_requested", None)

    def record_outcome(self, job_id: str, ok: bool) -> tuple[int, bool]:
        """Count a run's outcome: (failures in a row now, True when this one paused the job)."""
        with self.file.edit() as rows:
            try:
                row = _row(rows, job_id)
            except NotFoundError:
                return 0, False
            if ok:
                row.pop("failures", None)
                return 0, False
            counted = row.get("failures")
            failures = (counted if isinstance(counted, int) else 0) + 1
            row["failures"] = failures
            paused_now = failures >= PAUSE_AFTER_FAILURES and not row.get("paused")
            if paused_now:
                row["paused"] = True
                row["paused_reason"] = f"{failures} failed runs in a row"
        return failures, paused_now


def _row(rows: list[dict], job_id: str) -> dict:
    wanted = str(job_id or "").strip()
    for row in rows:
        if str(row.get("id")) == wanted:
            return row
    named = [row for row in rows if str(row.get("name") or "").casefold() == wanted.casefold()]
    if len(named) == 1:
        return named[0]
    known = ", ".join(f"{row.get('id')} ({row.get('name')})" for row in rows[:20]) or "none"
    raise NotFoundError(f"no job {job_id!r}; the jobs are: {known}")


class RunLog:
    """``jobs/runs.jsonl``: one line per run (planned, started, finished, message ids or error), or per
    planned runs let go (``"outcome": "skipped"``)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def append(self, record: dict) -> None:
        """Append a line; the file is cut to its newest lines once it grows past ``RUNS_MAX_BYTES``."""
        self.workspace.append_jsonl(RUNS_FILE, record)
        try:
            size = self.workspace.path(RUNS_FILE).stat().st_size
        except OSError:
            return
        if size > RUNS_MAX_BYTES:
            with self.workspace.lock(RUNS_FILE):
                lines = self.workspace.read_text(RUNS_FILE, default="").splitlines()[-RUNS_KEEP_LINES:]
                self.workspace.write_text(RUNS_FILE, "\n".join(lines) + "\n")

    def records(self) -> list[dict]:
        """Every readable line, oldest first (a torn or hand-broken line is skipped)."""
        return self.workspace.read_jsonl(RUNS_FILE)

    def has_run(self, run_id: str) -> bool:
        """True when a run with this id has its line already (a replay after a crash must not add one)."""
        return any(record.get("run") == run_id for record in self.records()[-RUNS_KEEP_LINES:])

    def for_job(self, job_id: str, limit: int = 20) -> list[dict]:
        """The newest ``limit`` lines of one job, oldest first."""
        return [record for record in self.records() if record.get("job") == job_id][-limit:]

    def on_day(self, day: date, tz: ZoneInfo) -> list[dict]:
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


def describe_next(job: Job, now: datetime) -> str:
    """``2026-12-02 07:30 Europe/Berlin`` for the job's next run, or why there is none."""
    if job.paused:
        return "paused"
    moment = job.next_run(now)
    if moment is None:
        return "none (done)"
    return moment.astimezone(job.schedule.zone).strftime("%Y-%m-%d %H:%M %Z")


def as_row(job: Job, now: datetime) -> dict[str, Any]:
    """A job as the CLI's ``--json``, the web page and the skill's ``list`` show it."""
    moment = job.next_run(now)
    return {
        **({"untrusted": True} if job.untrusted else {}),
        "id": job.id,
        "name": job.name,
        "schedule": job.schedule.describe(),
        "kind": job.kind,
        "text": job.text,
        "catch_up": job.catch_up,
        "paused": job.paused,
        "failures": job.failures,
        "next_run": moment.astimezone(job.schedule.zone).isoformat(timespec="seconds") if moment else None,
        "last_planned": job.last_planned.astimezone(job.schedule.zone).isoformat(timespec="seconds")
        if job.last_planned
        else None,
    }


__all__ = [
    "JOBS_FILE",
    "RUNS_FILE",
    "Job",
    "JobError",
    "JobStore",
    "RunLog",
    "as_row",
    "describe_next",
    "run_id",
]
