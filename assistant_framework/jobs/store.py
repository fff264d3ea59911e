"""The jobs the assistant schedules: ``jobs/jobs.json``, read and changed under the workspace lock.

It is meant to be read and edited by hand. ``jobs.json`` is a list of objects; a row that cannot be
read (no schedule, two payloads, a bad cron) is reported with its id and skipped: it costs only itself.
The scheduler writes two fields into a row: ``last_planned`` (the newest planned run it has queued or let
go) and ``failures`` (failed runs in a row); ``paused`` is set after three of them. A row read into a
``Job`` is ``job``; the runs' log is ``runs``.
"""

from __future__ import annotations

import logging
from datetime import datetime

from assistant_framework.config.settings.jobs import JobsSettings
from assistant_framework.jobs.job import PAYLOAD_KEYS, SCHEDULE_KEYS, Job, JobError, job_of
from assistant_framework.jobs.limits import too_often, within_limits
from assistant_framework.json_types import JsonObject
from assistant_framework.schedules import as_utc, from_iso
from assistant_framework.stores._common import JsonListFile, NotFoundError, iso, now_utc, one_line
from assistant_framework.stores.provenance import mark_record
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

JOBS_FILE = "jobs/jobs.json"
#: Failed runs in a row after which a job is paused (and the owner told once).
PAUSE_AFTER_FAILURES = 3
#: The longest ``message`` or ``prompt`` kept (a job's text is sent, or is a model turn, at every run).
MAX_TEXT_CHARS = 4000


#: Problems already logged, so a broken row is reported once, not at every look.
_reported: set[str] = set()


class JobStore:
    """``jobs/jobs.json`` under the workspace lock; every reader gets the readable jobs and the problems."""

    def __init__(self, workspace: Workspace, default_tz: str = "UTC", limits: JobsSettings | None = None) -> None:
        self.workspace = workspace
        self.default_tz = default_tz
        self.limits = limits  # given: jobs() keeps only the jobs within them (``limits``), naming the rest
        self.file: JsonListFile[JsonObject] = JsonListFile(workspace, JOBS_FILE)

    def rows(self) -> list[JsonObject]:
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
                problems.append(f"{JOBS_FILE} row {index} ({_label(row)}): {err}")
                continue
            if job.id in seen:
                problems.append(f"{JOBS_FILE} row {index}: id {job.id!r} is used twice; only the first runs")
                continue
            seen.add(job.id)
            jobs.append(job)
        if self.limits is not None:
            jobs, over = within_limits(jobs, self.limits, now_utc(), JOBS_FILE)
            problems += over
        self._report(problems)
        return jobs, problems

    @staticmethod
    def _report(problems: list[str]) -> None:
        for problem in problems:
            if problem not in _reported:
                _reported.add(problem)
                log.warning("jobs: %s; the other jobs run", problem)

    def fill_in(self, now: datetime) -> list[str]:
        """Give each row written by hand what only the store makes: an ``id``, a ``created_at`` (``now``;
        without it an ``every_minutes`` job's first run would move on at every read) and its ``timezone``
        (``runtime.timezone``, as the skill and the CLI write it: read in the zone of the day, a one-time job that
        ran would run again at its wall time in the next zone). Written back atomically, and only when a row
        lacked one; the ids given."""
        try:
            rows = self.rows()
        except ValueError:
            return []  # not a list: jobs() reports it
        if all(str(row.get("id") or "").strip() and row.get("created_at") and row.get("timezone") for row in rows):
            return []
        given = []
        with self.file.edit() as rows:
            for index, row in enumerate(rows):
                if not row.get("created_at"):
                    row["created_at"] = iso(as_utc(now))
                if not row.get("timezone"):
                    row["timezone"] = self.default_tz
                if not str(row.get("id") or "").strip():
                    row.pop("id", None)
                    rows[index] = {"id": self.file.allocate_id(rows, "j"), **row}
                    given.append(rows[index]["id"])
        return given

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
        self,
        fields: JsonObject,
        *,
        untrusted: bool = False,
        max_jobs: int | None = None,
        now: datetime | None = None,
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
            job = job_of({"id": "new", **row}, self.default_tz)
            why = too_often(job, self.limits, now or now_utc()) if self.limits is not None else None
            if why:
                raise JobError(f"{why}; use a longer schedule, or a message job (no model call)")
            row = {"id": self.file.allocate_id(rows, "j"), **row}
            job = job_of(row, self.default_tz)
            rows.append(row)
        return job

    def update(self, job_id: str, changes: JsonObject, now: datetime | None = None, *, untrusted: bool = False) -> Job:
        """Change fields of a job (a new schedule replaces the old one, a new payload the old one); a change
        made in a turn with outside content marks the job, as ``add`` does (its runs then start untrusted)."""
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
            if untrusted:
                mark_record(new)
            job = job_of(new, self.default_tz)
            too_often_now = too_often(job, self.limits, now or now_utc()) if self.limits is not None else None
            if too_often_now:
                raise JobError(f"{too_often_now}; use a longer schedule, or a message job (no model call)")
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

    def remove(self, job_id: str) -> JsonObject:
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


def _label(row: JsonObject) -> str:
    """``j2 'feb30'``: a row's id and name as a problem names it (a name cut short: it may be anyone's text)."""
    name = one_line(row.get("name"))[:60]
    return f"{row.get('id') or 'no id'}" + (f" {name!r}" if name else "")


def _row(rows: list[JsonObject], job_id: str) -> JsonObject:
    wanted = str(job_id or "").strip()
    for row in rows:
        if str(row.get("id")) == wanted:
            return row
    named = [row for row in rows if str(row.get("name") or "").casefold() == wanted.casefold()]
    if len(named) == 1:
        return named[0]
    known = ", ".join(f"{row.get('id')} ({row.get('name')})" for row in rows[:20]) or "none"
    raise NotFoundError(f"no job {job_id!r}; the jobs are: {known}")
