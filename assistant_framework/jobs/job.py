"""One job as the scheduler and the owner see it: a row of ``jobs/jobs.json`` read into a ``Job`` (its
schedule and payload checked, a ``JobError`` saying what to write when they are wrong), and how a job is
shown (its next run, its row for the CLI, the web page and the skill)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict
from zoneinfo import ZoneInfo

from assistant_framework.jobs.schedule import CATCH_UP, Schedule, check_cron, local_time
from assistant_framework.json_types import JsonObject
from assistant_framework.schedules import as_utc, from_iso, next_cron_time, zone
from assistant_framework.stores._common import now_utc, one_line
from assistant_framework.stores.provenance import is_untrusted

SCHEDULE_KEYS = ("cron", "every_minutes", "at")
PAYLOAD_KEYS = ("message", "prompt")

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
    #: The conversation it was made in (a Telegram forum topic of the owner's chat: its runs go there).
    conversation_id: str = ""

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


def schedule_of(row: JsonObject, default_tz: str) -> Schedule:
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
    anchor = _moment(row, "created_at")
    if anchor is not None:  # whole seconds, as last_planned is stored: a run is never found due twice
        anchor = anchor.replace(microsecond=0)
    if key == "cron":
        try:
            check_cron(str(row["cron"]))
        except ValueError as err:
            raise JobError(f"{err}; {EXAMPLES['cron']}") from None
        cron = " ".join(str(row["cron"]).split())
        try:  # valid fields that no date matches (30 February) never fire: croniter gives up looking
            next_cron_time(cron, now_utc(), tz_name)
        except (ValueError, OverflowError):
            raise JobError(
                f"cron {cron!r} never fires: no date matches its day, month and weekday together "
                f"(e.g. 30 February); {EXAMPLES['cron']}"
            ) from None
        return Schedule("cron", tz_name, cron=cron, anchor=anchor)
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
    except OverflowError:  # a time at the calendar's end, moved to UTC
        raise JobError(f"at {row['at']!r} is too far ahead to plan; {EXAMPLES['at']}") from None
    return Schedule("at", tz_name, at=at, anchor=anchor)


def job_of(row: JsonObject, default_tz: str) -> Job:
    """A readable job from a row; JobError naming the row and what is wrong."""
    job_id = str(row.get("id") or "").strip()
    if not job_id:
        raise JobError("a job row has no id (the running bot gives it one, and its created_at, at its next look)")
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
    created = (_moment(row, "created_at") or now_utc()).replace(microsecond=0)
    if schedule.anchor is None:
        schedule = Schedule(schedule.kind, schedule.tz, schedule.cron, schedule.minutes, schedule.at, created)
    failures = row.get("failures")
    job = Job(
        id=job_id,
        name=one_line(row.get("name")) or job_id,
        schedule=schedule,
        message=row["message"] if payloads[0] == "message" else None,
        prompt=row["prompt"] if payloads[0] == "prompt" else None,
        catch_up=catch_up,
        paused=bool(row.get("paused")),
        chat_id=row.get("chat_id"),
        created_at=created,
        last_planned=_moment(row, "last_planned"),
        failures=failures if isinstance(failures, int) and not isinstance(failures, bool) else 0,
        untrusted=is_untrusted(row),
        run_requested=str(row["run_requested"]) if row.get("run_requested") else None,
        conversation_id=str(row.get("conversation_id") or ""),
    )
    try:  # what the scheduler will compute: a row it cannot plan is refused here, where it costs only itself
        job.schedule.next_after(job.last_planned or job.created_at)
        job.next_run(now_utc())
    except (ValueError, OverflowError) as err:
        raise JobError(f"its schedule cannot be planned ({err}); {EXAMPLES[_key(schedule)]}") from None
    return job


def _moment(row: JsonObject, key: str) -> datetime | None:
    """A row's stored moment (``created_at``, ``last_planned``) in UTC, None when absent; JobError when it is
    there but not a usable date (unreadable, or at the calendar's end where moving it to UTC overflows)."""
    value = row.get(key)
    if value in (None, ""):
        return None
    moment = from_iso(str(value))
    if moment is None:
        raise JobError(f'{key} {value!r} is not a date and time; e.g. "2026-12-01T07:30:00+00:00", or leave it out')
    return moment


def _key(schedule: Schedule) -> str:
    return {"cron": "cron", "every": "every_minutes", "at": "at"}[schedule.kind]


def describe_next(job: Job, now: datetime) -> str:
    """``2026-12-02 07:30 Europe/Berlin`` for the job's next run, or why there is none."""
    if job.paused:
        return "paused"
    moment = job.next_run(now)
    if moment is None:
        return "none (done)"
    return moment.astimezone(job.schedule.zone).strftime("%Y-%m-%d %H:%M %Z")


class JobRow(TypedDict, total=False):
    """A job as the CLI's ``--json``, the web page and the skill's ``list`` show it (``untrusted`` first, only
    when it is marked; the times in the schedule's zone, None when there is none)."""

    untrusted: bool
    id: str
    name: str
    schedule: str
    kind: str
    text: str
    catch_up: str
    paused: bool
    failures: int
    next_run: str | None
    last_planned: str | None


def as_row(job: Job, now: datetime) -> JobRow:
    """A job as the CLI's ``--json``, the web page and the skill's ``list`` show it."""
    moment = job.next_run(now)
    row: JobRow = {"untrusted": True} if job.untrusted else {}
    row |= {
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
    return row
