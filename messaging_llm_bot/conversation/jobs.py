"""A small asyncio job queue with the part of PTB's JobQueue API ``ReminderScheduler`` uses.

For frontends that do not run python-telegram-bot (Signal): ``run_once``, ``run_repeating``,
``run_daily``, ``get_jobs_by_name`` and ``job.schedule_removal()``. Callbacks are coroutines
taking a context whose ``.job`` has ``.data`` and ``.name``; a failing callback is logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from datetime import time as dtime
from typing import Any

log = logging.getLogger(__name__)

Callback = Callable[[Any], Awaitable[None]]


@dataclass
class AsyncJob:
    """One scheduled callback; ``schedule_removal()`` cancels it."""

    name: str
    data: Any = None
    removed: bool = False
    _handle: asyncio.Handle | None = field(default=None, repr=False)

    def schedule_removal(self) -> None:
        """Do not run this job (again)."""
        self.removed = True
        if self._handle is not None:
            self._handle.cancel()


@dataclass
class JobContext:
    """What a callback receives (``context.job``), like PTB's CallbackContext."""

    job: AsyncJob


def seconds_until(when: datetime | float | int | timedelta, now: datetime | None = None) -> float:
    """Delay in seconds for a JobQueue-style ``when`` (seconds, timedelta or aware datetime)."""
    if isinstance(when, timedelta):
        return max(0.0, when.total_seconds())
    if isinstance(when, datetime):
        now = now or datetime.now(UTC)
        return max(0.0, (when - now).total_seconds())
    return max(0.0, float(when))


def next_daily(at: dtime, now: datetime) -> datetime:
    """The next instant at wall time ``at`` (aware ``at.tzinfo``, default UTC) strictly after ``now``.

    Compared as instants, not wall times: on the night the clocks go back a time inside the repeated
    hour is the first of its two, and once that has passed the next one is the next day's.
    """
    zone = at.tzinfo or UTC
    local = now.astimezone(zone)
    candidate = datetime.combine(local.date(), at.replace(tzinfo=None), tzinfo=zone)
    if candidate.astimezone(UTC) <= now.astimezone(UTC):
        candidate = datetime.combine(local.date() + timedelta(days=1), at.replace(tzinfo=None), tzinfo=zone)
    return candidate


def today_at(at: dtime, now: datetime) -> datetime:
    """The instant of wall time ``at`` (in ``at.tzinfo``, default UTC) on ``now``'s local date, in UTC; a time
    the clocks skip that night is read as ``next_daily`` reads it."""
    zone = at.tzinfo or UTC
    local = now.astimezone(zone)
    return datetime.combine(local.date(), at.replace(tzinfo=None), tzinfo=zone).astimezone(UTC)


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class DailyJob:
    """``callback`` once a day at wall time ``at``, planned with ``run_once`` on a PTB JobQueue or AsyncJobQueue.

    Each run is planned from the instant the previous one was due (``next_daily``): a time inside the
    hour the clocks go back runs once (PTB's ``run_daily``, a cron trigger, ran it in both), and a timer
    that fires a little early does not run it a second time. ``clock`` is injectable for tests.

    ``last``: when the last run that ended was due (kept by the caller across restarts, ``ran`` is told each
    one). A start later the same local day than a time not run yet (the process was down at 07:30) runs it
    now, once; an earlier day's is let go. None (never run): nothing is made up.
    """

    job_queue: Any
    callback: Callback
    at: dtime
    name: str
    clock: Callable[[], datetime] = _utc_now
    due: datetime | None = None
    last: datetime | None = None
    ran: Callable[[datetime], None] | None = None

    def start(self) -> DailyJob:
        """Plan the first run: today's now when it was missed, else the next one."""
        now = self.clock().astimezone(UTC)
        today = today_at(self.at, now)
        if self.last is not None and self.last.astimezone(UTC) < today <= now:
            self.due = today
            self.job_queue.run_once(self._run, when=0, name=self.name)
        else:  # after the last one, also when the clock was set back since: it is not run a second time
            self._plan(max(now, self.last.astimezone(UTC)) if self.last is not None else now)
        return self

    def _plan(self, after: datetime) -> None:
        self.due = next_daily(self.at, after)
        self.job_queue.run_once(self._run, when=self.due, name=self.name)

    async def _run(self, context: Any) -> None:
        due = self.due
        now = self.clock().astimezone(UTC)
        # The next run first, so a failing callback does not end the schedule.
        self._plan(max(now, due.astimezone(UTC)) if due is not None else now)
        await self.callback(context)
        if self.ran is not None and due is not None:
            self.ran(due)


#: The longest a wait for a wall-clock time sleeps before it reads the wall clock again.
RECHECK_SECONDS = 30.0


class AsyncJobQueue:
    """Jobs on the running event loop; create and use it from that loop.

    A ``run_once`` at an aware datetime runs when the wall clock (``clock``) reaches it. asyncio's timers count
    on the monotonic clock, which a suspend stops and an NTP step does not move: one timer for the whole wait
    fired hours late after a laptop slept, and early after the clock was set back. So the wait is cut into
    steps of at most ``recheck_seconds``, each measured again on the wall clock."""

    def __init__(self, clock: Callable[[], datetime] | None = None, recheck_seconds: float = RECHECK_SECONDS) -> None:
        self._jobs: list[AsyncJob] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self.clock = clock or _utc_now
        self.recheck_seconds = recheck_seconds

    def _start(self, job: AsyncJob, callback: Callback) -> None:
        task = asyncio.get_running_loop().create_task(self._run(job, callback))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _at(self, job: AsyncJob, when: datetime, callback: Callback) -> None:
        loop = asyncio.get_running_loop()

        def wake() -> None:
            if job.removed:
                return
            left = seconds_until(when, self.clock())
            if left > 0:  # not yet on the wall clock: sleep again, one step at most
                job._handle = loop.call_later(min(left, self.recheck_seconds), wake)
                return
            job.removed = True
            self._start(job, callback)

        job._handle = loop.call_soon(wake)

    def _schedule(self, job: AsyncJob, delay: float, callback: Callback, then: Callable[[], float | None]) -> None:
        loop = asyncio.get_running_loop()

        def fire() -> None:
            if job.removed:
                return
            self._start(job, callback)
            following = then()
            if following is None:
                job.removed = True
            else:
                job._handle = loop.call_later(following, fire)

        job._handle = loop.call_later(delay, fire)

    async def _run(self, job: AsyncJob, callback: Callback) -> None:
        try:
            await callback(JobContext(job))
        except Exception:  # noqa: BLE001 - one failing job must not stop the others
            log.exception("job %s failed", job.name)

    def _add(self, name: str | None, data: Any) -> AsyncJob:
        self._jobs = [j for j in self._jobs if not j.removed]
        job = AsyncJob(name=name or "job", data=data)
        self._jobs.append(job)
        return job

    def run_once(self, callback: Callback, when: Any, data: Any = None, name: str | None = None) -> AsyncJob:
        """Run ``callback`` once after ``when`` (seconds or timedelta) or at ``when`` (an aware datetime, on the
        wall clock)."""
        job = self._add(name, data)
        if isinstance(when, datetime):
            self._at(job, when, callback)
        else:
            self._schedule(job, seconds_until(when), callback, lambda: None)
        return job

    def run_repeating(
        self, callback: Callback, interval: float, first: Any = None, data: Any = None, name: str | None = None
    ) -> AsyncJob:
        """Run ``callback`` every ``interval`` seconds, the first time after ``first`` (default: interval)."""
        job = self._add(name, data)
        self._schedule(job, seconds_until(interval if first is None else first), callback, lambda: float(interval))
        return job

    def run_daily(self, callback: Callback, time: dtime, data: Any = None, name: str | None = None) -> AsyncJob:
        """Run ``callback`` every day at wall time ``time`` (in ``time.tzinfo``; DST-correct)."""
        job = self._add(name, data)

        def delay() -> float:
            now = datetime.now(UTC)
            return seconds_until(next_daily(time, now), now)

        self._schedule(job, delay(), callback, delay)
        return job

    def get_jobs_by_name(self, name: str) -> tuple[AsyncJob, ...]:
        """The live jobs called ``name``."""
        return tuple(j for j in self._jobs if j.name == name and not j.removed)

    async def stop(self, finish_seconds: float = 0.0) -> None:
        """Cancel every job; callbacks running get ``finish_seconds`` to end (a reminder sent a moment ago is
        then marked delivered, not shown again at the next start), the rest are cancelled and waited for.

        No job starts once this is called: a repeating one (the reminders' poll) firing while the running
        ones finish would reach for a thread pool that may be going away with the process."""
        for job in self._jobs:
            job.schedule_removal()
        self._jobs.clear()
        if self._tasks and finish_seconds > 0:
            await asyncio.wait(set(self._tasks), timeout=finish_seconds)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
