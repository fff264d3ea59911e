"""When a job runs: its schedule (``cron``, ``every_minutes`` or ``at``) and the runs due at a moment.

Cron expressions go through croniter in the job's IANA zone
(``assistant_framework.schedules.next_cron_time``), so a daily 07:30 stays 07:30 local across DST. On
top of it one rule, as Vixie cron has it: in the hour the clocks go back, the second pass of a wall
time is not a new run (croniter would fire a daily 02:30 twice that night). A time the clocks skip
(02:30 on the night they go forward) runs once, when the gap ends (03:00).
``every_minutes`` counts elapsed time from the job's start, ``at`` is one local time.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from itertools import pairwise
from zoneinfo import ZoneInfo

from assistant_framework.schedules import as_utc, next_cron_time, previous_cron_time, validate_cron, zone

CATCH_UP = ("once", "skip", "all")
#: A run started this long after its planned time still counts as on time (the scheduler looks every
#: ``jobs.poll_seconds``); later ones were missed (the bot was down) and follow the job's ``catch_up``.
ON_TIME = timedelta(seconds=90)
#: The most fire times walked in one look (a minute job after a year of downtime is 525600 of them; each
#: cron step is a croniter call, about 0.1-0.5 ms): past it the look jumps to the newest ones.
_SCAN = 200


@dataclass(frozen=True)
class Schedule:
    """One job's schedule; ``anchor`` is where ``every_minutes`` counts from (UTC)."""

    kind: str  # "cron" | "every" | "at"
    tz: str
    cron: str | None = None
    minutes: int | None = None
    at: datetime | None = None  # aware, in ``tz``
    anchor: datetime | None = None

    @property
    def zone(self) -> ZoneInfo:
        return zone(self.tz)

    @property
    def step(self) -> timedelta:
        """The interval of an ``every`` schedule."""
        if self.minutes is None:
            raise ValueError(f"a {self.kind} schedule has no interval")
        return timedelta(minutes=self.minutes)

    @property
    def moment(self) -> datetime:
        """The one time of an ``at`` schedule."""
        if self.at is None:
            raise ValueError(f"a {self.kind} schedule has no single time")
        return self.at

    @property
    def expression(self) -> str:
        """The cron expression of a ``cron`` schedule."""
        if self.cron is None:
            raise ValueError(f"a {self.kind} schedule has no cron expression")
        return self.cron

    def next_after(self, after: datetime) -> datetime | None:
        """The first run strictly after ``after`` (UTC), or None when there is none (a past ``at``)."""
        after = as_utc(after)
        if self.kind == "at":
            moment = as_utc(self.moment)
            return moment if moment > after else None
        if self.kind == "every":
            step = self.step
            anchor = as_utc(self.anchor or after)
            if after < anchor:
                return anchor
            return anchor + step * ((after - anchor) // step + 1)
        fire = next_cron_time(self.expression, after, self.tz)
        while _second_pass(fire, self.zone):
            fire = next_cron_time(self.expression, fire, self.tz)
        return fire

    def newest_until(self, now: datetime, count: int, after: datetime) -> list[datetime]:
        """The newest ``count`` runs in ``(after, now]``, oldest first, found backwards from ``now`` (so a
        schedule far behind costs ``count`` steps, not one per run missed)."""
        now, after = as_utc(now), as_utc(after)
        if self.kind != "cron":  # ``every`` jumps by arithmetic and ``at`` has one run: walking is cheap
            found: list[datetime] = []
            moment = after
            while (fire := self.next_after(moment)) is not None and fire <= now:
                found = [*found[-(count - 1) :], fire] if count > 1 else [fire]
                moment = fire
            return found
        found, cursor = [], now + timedelta(seconds=1)
        for _ in range(count + 120):  # a repeated hour's second pass has at most 60 times to step over
            fire = previous_cron_time(self.expression, cursor, self.tz)
            if fire is None or fire <= after or len(found) >= count:
                break
            if not _second_pass(fire, self.zone):
                found.append(fire)
            cursor = fire
        return found[::-1]

    def describe(self) -> str:
        """The schedule in words a user reads (``cron 30 7 * * 1-5 (Europe/Berlin)``)."""
        if self.kind == "cron":
            return f"cron {self.cron} ({self.tz})"
        if self.kind == "every":
            return f"every {self.minutes} minute{'s' if self.minutes != 1 else ''}"
        return f"once at {self.moment.strftime('%Y-%m-%d %H:%M')} ({self.tz})"


def _second_pass(moment: datetime, tz: ZoneInfo) -> bool:
    """True when ``moment`` is the second occurrence of its wall time (the hour the clocks go back)."""
    local = moment.astimezone(tz)
    first = local.replace(fold=0).astimezone(UTC)
    return first != moment.astimezone(UTC)


def local_time(text: str, tz: ZoneInfo) -> datetime:
    """``YYYY-MM-DD HH:MM`` (or with ``T``) in ``tz`` as an aware datetime; a time the clocks skip moves on."""
    naive = datetime.strptime(str(text).strip().replace("T", " ", 1), "%Y-%m-%d %H:%M")
    return naive.replace(tzinfo=tz).astimezone(UTC).astimezone(tz)


def check_cron(expr: str) -> None:
    """ValueError naming the expression and the field that is wrong (``hour 25 is out of 0-23``)."""
    validate_cron(str(expr))


def shortest_gap(schedule: Schedule, now: datetime, samples: int = 48) -> timedelta | None:
    """The shortest time between two runs over the next ``samples`` runs (None for a one-time job)."""
    if schedule.kind == "at":
        return None
    if schedule.kind == "every":
        return schedule.step
    # Looked at on every scheduler look, for every prompt job: one walk of the cron per day is enough.
    return _cron_gap(schedule.expression, schedule.tz, as_utc(now).date(), samples)


@lru_cache(maxsize=256)
def _cron_gap(expression: str, tz: str, day: date, samples: int) -> timedelta | None:
    schedule = Schedule("cron", tz, cron=expression)
    times: list[datetime] = []
    moment: datetime | None = datetime(day.year, day.month, day.day, tzinfo=UTC)
    for _ in range(samples):
        moment = schedule.next_after(moment) if moment is not None else None
        if moment is None:
            break
        times.append(moment)
    gaps = [b - a for a, b in pairwise(times)]
    return min(gaps) if gaps else None


@dataclass
class Due:
    """What is due for one job at one look: the runs to make now and the planned runs let go."""

    runs: list[tuple[datetime, bool]] = field(default_factory=list)  # (planned, late)
    skipped: list[datetime] = field(default_factory=list)  # missed runs not made (catch_up), oldest first
    skipped_count: int = 0  # all of them (``skipped`` keeps the newest few)
    mark: datetime | None = None  # the newest planned time looked at: the next look starts after it
    counted_all: bool = True  # False: the look jumped over runs it did not count (``skipped_count`` is a floor)


def due_runs(
    schedule: Schedule,
    since: datetime,
    now: datetime,
    *,
    catch_up: str = "once",
    cap: int = 10,
    on_time: timedelta = ON_TIME,
) -> Due:
    """The runs planned in ``(since, now]`` and what to do with them.

    One planned less than ``on_time`` ago runs as usual. Older ones were missed (the bot was down):
    ``once`` makes the newest of them, marked late (none when a run is on time now); ``skip`` makes none;
    ``all`` makes the newest ``cap``. The rest are returned as skipped, to be recorded.
    """
    since, now = as_utc(since), as_utc(now)
    due = Due(mark=None)
    late: deque[datetime] = deque(maxlen=max(cap, 1) + 5)
    fresh: list[datetime] = []
    moment, missed = _jump_ahead(schedule, since, now, keep=late.maxlen or 0)

    def place(fire: datetime) -> None:
        nonlocal missed
        if now - fire <= on_time:
            fresh.append(fire)
        else:
            if len(late) == late.maxlen:
                missed += 1
            late.append(fire)

    for _ in range(_SCAN):
        fire = schedule.next_after(moment)
        if fire is None or fire > now:
            break
        moment = fire
        place(fire)
    else:
        fire = schedule.next_after(moment)
        if fire is not None and fire <= now:
            # Still behind after _SCAN runs (a minute cron dated years ago): the runs between are let go
            # uncounted, and only the newest, which catch_up may make, are found (backwards from now).
            recent = schedule.newest_until(now, late.maxlen or 1, after=moment)
            for fire in recent:
                place(fire)
            moment = recent[-1] if recent else moment
            due.counted_all = False
    if moment > since:
        due.mark = moment
    late_list = list(late)
    made = _missed_runs_made(late_list, catch_up, cap, on_time_run=bool(fresh))
    let_go = late_list[: len(late_list) - len(made)]
    due.runs = [(when, True) for when in made] + [(when, False) for when in fresh]
    due.skipped = let_go
    due.skipped_count = missed + len(let_go)
    return due


def _jump_ahead(schedule: Schedule, since: datetime, now: datetime, *, keep: int) -> tuple[datetime, int]:
    """Where the look for runs starts and how many missed runs it jumps over: an ``every`` schedule far
    behind jumps over what no catch-up makes (all but the newest ``keep``), counted, so the count stays right."""
    if schedule.kind == "every" and schedule.anchor is not None:
        step = schedule.step
        behind = (now - since) // step
        if behind > _SCAN:
            skipped_ahead = behind - keep
            return since + step * skipped_ahead, skipped_ahead
    return since, 0


def _missed_runs_made(late: list[datetime], catch_up: str, cap: int, *, on_time_run: bool) -> list[datetime]:
    """Which of the missed runs (oldest first) are made: the newest ``cap`` (``all``), the newest one when
    no run is on time now (``once``), none (``skip``)."""
    if catch_up == "all":
        return late[-cap:]
    if catch_up == "once" and not on_time_run:
        return late[-1:]
    return []
