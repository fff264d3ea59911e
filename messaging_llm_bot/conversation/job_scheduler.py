"""The job scheduler (docs/jobs.md): one per process (conversation/job_router.py), it looks at
``jobs/jobs.json`` on its job queue (every ``jobs.poll_seconds``, sooner when a run is due sooner), plans
the due runs with the job's ``catch_up`` and accepts each into the inbox under its run id
(``job:<id>:<planned time>``; conversation/job_runs.py holds the run's record and texts). The inbox takes
an id once, so two runs of one planned time never both happen; only then is the job's ``last_planned``
moved on.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from assistant_framework.config.settings import Settings
from assistant_framework.hints import CLI
from assistant_framework.inbox import InboxItem
from assistant_framework.inbox.item import InboxPayload
from assistant_framework.jobs import JOBS_FILE, Job, JobStore, RunLog, Schedule, due_runs, run_id
from assistant_framework.jobs.schedule import ON_TIME
from assistant_framework.schedules import as_utc, from_iso, to_iso
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.job_runs import NOTICE, NOTICE_PROBLEMS, TOLD_FILE, JobRun, is_job_item
from messaging_llm_bot.conversation.markup import escape_markdown

log = logging.getLogger(__name__)


class RunInbox(Protocol):
    """The part of the durable inbox the scheduler uses (an ``Inbox``, or the router's inbox of every channel)."""

    def accept(self, source_id: str, conversation_id: str, payload: InboxPayload) -> InboxItem | None: ...

    def pending(self, prefix: str = "") -> list[InboxItem]: ...


def problems_notice(problems: list[str]) -> str:
    """What the owner is told of rows of jobs/jobs.json that do not run (Markdown; each problem as written)."""
    lines = ["⚠️ **Scheduled jobs**: some rows do not run (the others do):"]
    lines += [f"- {escape_markdown(problem[:300])}" for problem in problems[:NOTICE_PROBLEMS]]
    if len(problems) > NOTICE_PROBLEMS:
        lines.append(f"- … and {len(problems) - NOTICE_PROBLEMS} more")
    lines.append(f"/jobs or `{CLI} jobs list` names them; fix or remove those rows in {escape_markdown(JOBS_FILE)}.")
    return "\n".join(lines)


def outside_job(chat: str | None) -> Job:
    """A job made without a row (a hook's run) that belongs to ``chat`` (None: the home channel): what
    ``claim`` takes to name the owner's chat of that channel."""
    return replace(_OWNERS_JOB, chat_id=chat or None, conversation_id=chat or "")


#: A job as written by hand (no chat): ``claim`` of it names the owner's chat on the frontend that runs such jobs.
_OWNERS_JOB = Job(
    id="",
    name="",
    schedule=Schedule("at", "UTC", at=datetime(2000, 1, 1, tzinfo=UTC)),
    message="",
    prompt=None,
    catch_up="skip",
    paused=True,
    chat_id=None,
    created_at=datetime(2000, 1, 1, tzinfo=UTC),
    last_planned=None,
    failures=0,
    untrusted=False,
)


class JobScheduler:
    """Puts due job runs into the inbox and hands them to their channel; on a PTB JobQueue or AsyncJobQueue."""

    def __init__(
        self,
        workspace: Workspace,
        inbox: RunInbox,
        job_queue: Any,
        *,
        claim: Callable[[Job], str | None],
        start: Callable[[InboxItem], None],
        settings: Callable[[], Settings],
        clock: Callable[[], datetime] | None = None,
        prefix: str = "",
    ) -> None:
        self.workspace = workspace
        self.inbox = inbox
        self.job_queue = job_queue
        self.claim = claim  # the conversation a job's runs go to, or None (no channel here runs it)
        self.start_item = start
        self.settings = settings
        self.clock = clock or (lambda: datetime.now(UTC))
        self.prefix = prefix  # the conversations whose left-over runs are offered again ("": every one)
        self.stopped = False
        self.looks = 0  # how many looks are done (a test waits for the next one)
        #: Jobs a look could not plan (each logged once; the others ran): one sentence each.
        self.failed: set[str] = set()
        self._next: Any = None  # the planned look (its job on the queue)
        self._looking = False
        self._again = False  # look again right after the look running now

    def start(self) -> None:
        """Look now, then again and again."""
        self._plan(0.0)

    def look_soon(self) -> None:
        """Look at once instead of at the planned time (a channel joined); on the job queue's loop."""
        if self._looking:
            self._again = True
            return
        if self._next is not None:
            self._next.schedule_removal()
        self._plan(0.0)

    def _plan(self, delay: float) -> None:
        if not self.stopped:
            self._next = self.job_queue.run_once(self._tick, when=max(0.05, delay), name="jobs:look")

    async def _tick(self, context: Any) -> None:
        poll = self.settings().jobs.poll_seconds
        self._looking, self._next = True, None
        try:
            items, wait = await asyncio.to_thread(self.look)
        except Exception as err:  # noqa: BLE001 - a damaged file or a full disk must not end the schedule
            log.warning("jobs: looking at the jobs failed: %s", err)
            items, wait = [], poll
        finally:
            self._looking = False
        if self.looks == 1:
            log.info("jobs: first look done; %d run(s) to make now", len(items))
        for item in items:
            try:
                self.start_item(item)
            except Exception:  # noqa: BLE001 - one run must not stop the others
                log.exception("jobs: could not start %s", item.item_id)
        if self._again:
            self._again, wait = False, 0.0
        self._plan(wait)

    def look(self) -> tuple[list[InboxItem], float]:
        """Queue every due run in the inbox; (the items to answer, seconds until the next look)."""
        settings = self.settings()
        poll = settings.jobs.poll_seconds
        now = as_utc(self.clock())
        store = JobStore(self.workspace, settings.runtime.timezone, settings.jobs)  # the limits hold here too
        for given in store.fill_in(now):
            log.info("jobs: a row written by hand is job %s now (its id and created_at written in)", given)
        jobs, problems = store.jobs()
        items: list[InboxItem] = []
        soonest = now + timedelta(seconds=poll)
        on_time = max(ON_TIME, timedelta(seconds=2 * poll))
        for job in jobs:
            try:
                upcoming = self._look_at(job, store, settings, now, on_time, items)
            except Exception as err:  # noqa: BLE001 - one row that cannot be planned must not stop the others
                problem = f"{JOBS_FILE}: job {job.id} ({job.name}) could not be planned: {err}"
                if problem not in self.failed:
                    log.warning("jobs: %s; the other jobs run", problem)
                    if len(self.failed) >= 100:  # bounded: a problem whose words change is not kept forever
                        self.failed.clear()
                    self.failed.add(problem)
                continue
            if upcoming is not None:
                soonest = min(soonest, upcoming)
        notice = self._tell(problems + sorted(self.failed), now)
        if notice is not None:
            items.append(notice)
        # A run whose delivery failed (network) stays in the inbox: offered again (the channel skips running ones).
        items += [item for item in self.inbox.pending(self.prefix) if is_job_item(item) and item not in items]
        self.looks += 1
        return items, (soonest - now).total_seconds()

    def _look_at(
        self,
        job: Job,
        store: JobStore,
        settings: Settings,
        now: datetime,
        on_time: timedelta,
        items: list[InboxItem],
    ) -> datetime | None:
        """Queue one job's due runs (and a ``run_now``) into ``items``; its next run after now, or None."""
        conversation = self.claim(job)
        if conversation is None:
            return None
        if job.run_requested:
            requested = from_iso(job.run_requested) or now
            stamp = run_id(job.id, requested).replace(f"job:{job.id}:", f"job:{job.id}:now-")
            item = self._queue(job, conversation, stamp, requested, late=False, requested=True)
            if item is not None:
                items.append(item)
            store.mark(job.id, None, clear_request=job.run_requested)
        if job.paused:
            return None
        since = job.last_planned or job.created_at
        due = due_runs(job.schedule, since, now, catch_up=job.catch_up, cap=settings.jobs.catch_up_max, on_time=on_time)
        for planned, late in due.runs:
            item = self._queue(job, conversation, run_id(job.id, planned), planned, late=late)
            if item is not None:
                items.append(item)
        if due.skipped_count:
            self._skipped(job, due.skipped, due.skipped_count, counted_all=due.counted_all)
        if due.mark is not None:
            store.mark(job.id, due.mark)
        return job.schedule.next_after(max(due.mark or since, now))

    def _tell(self, problems: list[str], now: datetime) -> InboxItem | None:
        """The owner's notice of rows that do not run (a broken file, a bad row, a limit), queued once for the
        problems not told before; None when there is nothing new, or the owner's chat is not this frontend's."""
        conversation = self.claim(_OWNERS_JOB)  # where a job written by hand runs: the owner's own chat
        if conversation is None:
            return None
        hashes = {hashlib.sha256(problem.encode()).hexdigest()[:16]: problem for problem in problems}
        told = self.workspace.read_json(TOLD_FILE, default=[])
        told = set(told) if isinstance(told, list) else set()
        new = [problem for digest, problem in hashes.items() if digest not in told]
        item = None
        if new:
            rid = "job:notice:" + hashlib.sha256("\n".join(sorted(new)).encode()).hexdigest()[:16]
            run = JobRun(rid, "", "jobs", NOTICE, problems_notice(new), to_iso(now) or "", False, "UTC")
            item = self.inbox.accept(rid, conversation, run.payload())  # None: told before a crash
        if set(hashes) != told:  # a problem gone is forgotten: told again if it comes back
            self.workspace.write_json(TOLD_FILE, sorted(hashes))
        return item

    def _queue(
        self, job: Job, conversation: str, rid: str, planned: datetime, *, late: bool, requested: bool = False
    ) -> InboxItem | None:
        run = JobRun(
            run_id=rid,
            job_id=job.id,
            name=job.name,
            kind=job.kind,
            text=job.text,
            planned=to_iso(planned) or "",
            late=late,
            timezone=job.schedule.tz,
            untrusted=job.untrusted,
            requested=requested,
        )
        item = self.inbox.accept(rid, conversation, run.payload())
        if item is None:
            log.info("jobs: run %s was queued before; not again", rid)
        else:
            log.info("jobs: run %s of %r queued%s", rid, job.name, " (late)" if late else "")
        return item

    def _skipped(self, job: Job, skipped: list[datetime], count: int, *, counted_all: bool = True) -> None:
        first = skipped[0] if skipped else None
        log.info("jobs: %d missed run(s) of %s (%r) not made (catch_up %s)", count, job.id, job.name, job.catch_up)
        RunLog(self.workspace).append(
            {
                "run": f"job:{job.id}:skipped-{(to_iso(skipped[-1]) if skipped else '')}",
                "job": job.id,
                "name": job.name,
                "kind": job.kind,
                "planned": to_iso(skipped[-1]) if skipped else None,
                **({"first_planned": to_iso(first)} if first is not None and len(skipped) > 1 else {}),
                "outcome": "skipped",
                "count": count,
                **({"count_is_a_floor": True} if not counted_all else {}),
                "reason": f"missed while the bot was down (catch_up {job.catch_up})",
            }
        )

    def stop(self) -> None:
        self.stopped = True
