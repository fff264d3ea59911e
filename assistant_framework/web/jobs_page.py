"""The Jobs page (docs/jobs.md): every job with its next run and recent runs; pause, resume, run now and
delete, each a POST with the page's CSRF token (``/api/jobs/...`` the same with the access token). The
page changes ``jobs/jobs.json`` only: the running bot picks a change up at its next look."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import tornado.web

from ..jobs import JobStore, RunLine, RunLog, as_row
from ..stores import NotFoundError
from . import window
from .base import BaseHandler
from .shapes import JobsBody, JobWithRuns

if TYPE_CHECKING:
    from .parts import Parts

#: Runs shown per job (all of them: `assistant jobs show ID` and jobs/runs.jsonl).
RUNS_SHOWN = 5
ACTIONS = ("pause", "resume", "run", "remove")


def job_rows(parts: Parts, start: int = 0, size: int | None = None) -> tuple[JobsBody, window.Window[JobWithRuns]]:
    """Every readable job (``size`` of them from ``start`` on, for a page: window.py) with its next run and newest
    runs, and the rows that cannot be read; and the same rows as the page's window of the list."""
    store = JobStore(parts.workspace, parts.settings.runtime.timezone, parts.settings.jobs)
    jobs, problems = store.jobs()
    shown = window.window(jobs, start, size) if size else window.Window(0, jobs, len(jobs))
    now = datetime.now(UTC)
    runs: dict[str, list[RunLine]] = {}
    for record in RunLog(parts.workspace).records():
        runs.setdefault(str(record.get("job")), []).append(record)
    rows: list[JobWithRuns] = [
        {**as_row(job, now), "runs": list(reversed(runs.get(job.id, [])[-RUNS_SHOWN:]))} for job in shown.rows
    ]
    return {"jobs": rows, "problems": problems}, window.Window(shown.first, rows, shown.total, shown.size)


def change(parts: Parts, job_id: str, action: str) -> str:
    """Do one action on a job; the sentence the page shows. NotFoundError for an unknown job."""
    store = JobStore(parts.workspace, parts.settings.runtime.timezone)
    job = store.get(job_id)
    now = datetime.now(UTC)
    if action == "run":
        store.request_run(job.id, now)
        return f"{job.id} {job.name}: runs at the bot's next look"
    if action == "remove":
        store.remove(job.id)
        return f"{job.id} {job.name}: deleted"
    store.set_paused(job.id, action == "pause", now=now)
    return f"{job.id} {job.name}: {'paused' if action == 'pause' else 'resumed'}"


class JobsHandler(BaseHandler):
    async def get(self) -> None:
        if self.api:
            self.send_json((await self.off_loop("files", job_rows, self.parts))[0])
            return
        asked = self.int_argument("from", 0, 0, 10**9)
        data, jobs = await self.off_loop("files", job_rows, self.parts, asked, window.ENTRIES)
        self.page("jobs.html", title="Jobs", data=data, jobs=jobs, done=self.get_query_argument("done", ""))


class JobActionHandler(BaseHandler):
    async def post(self, job_id: str, action: str) -> None:
        if action not in ACTIONS:
            raise tornado.web.HTTPError(404, "no such action")
        try:
            said = await self.off_loop("files", change, self.parts, job_id, action)
        except NotFoundError:
            raise tornado.web.HTTPError(404, "no such job") from None
        if self.api:
            self.send_json({"id": job_id, "done": action, "said": said})
        else:
            self.redirect("/jobs?" + urlencode({"done": said}))
