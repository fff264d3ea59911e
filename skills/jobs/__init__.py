"""Built-in skill: jobs the assistant runs on a schedule (a message sent as it is, or a prompt answered)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TypedDict

from assistant_framework.config.settings import JobsSettings
from assistant_framework.jobs import CATCH_UP, Job, JobError, JobRow, JobStore, as_row, describe_next
from assistant_framework.jobs.job import EXAMPLES, PAYLOAD_KEYS, SCHEDULE_KEYS
from assistant_framework.jobs.schedule import shortest_gap
from assistant_framework.json_types import JsonObject
from assistant_framework.skills.once import Action, made_before, made_once
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import MARKED, context_now, context_untrusted, context_zone, need
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Scheduled jobs: by cron, every N minutes or once (at), send a message or answer a prompt. One alert: reminders."
)
CAPABILITIES = ["read", "write"]
ACTIONS = ["add", "list", "update", "pause", "resume", "remove", "run_now"]
#: Each job added, under the message its turn answers (assistant_framework/skills/once.py).
ADDED = "state/jobs-added.jsonl"
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ACTIONS},
        "id": {"type": "string"},
        "name": {"type": "string"},
        "cron": {"type": "string", "examples": ["30 7 * * 1-5"]},
        "every_minutes": {"type": "integer"},
        "at": {
            "type": "string",
            "pattern": "^\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}$",
            "examples": ["2026-12-24 09:00"],
        },
        "timezone": {"type": "string"},
        "message": {"type": "string"},
        "prompt": {"type": "string"},
        "catch_up": {"enum": list(CATCH_UP)},
    },
    "required": ["action"],
    "additionalProperties": False,
}

NOT_HERE = (
    "jobs belong to the owner and run in the owner's private chat; they cannot be made or changed from "
    "this chat. Tell the user to ask in the owner's own chat."
)


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    if context is not None and not context.private:
        raise PermissionError(NOT_HERE)
    zone = context_zone(context)
    now = context_now(context)
    # Without a context (a direct call) no limits: the bot always passes its config's.
    limits = context.settings.jobs if context is not None else None
    store = JobStore(workspace, default_tz=zone.key)
    action = args["action"]
    if action == "list":
        jobs, problems = store.jobs()
        rows: list[JobRow | BrokenRow] = [_shown(as_row(job, now)) for job in jobs]
        rows += [{"broken_row": problem} for problem in problems]
        return rows or "no jobs yet"
    if action == "add":
        return _add(workspace, store, args, context, limits, now)
    need(args, action, "id")
    if action == "update":
        changes = {
            key: args[key] for key in ("name", "timezone", "catch_up", *SCHEDULE_KEYS, *PAYLOAD_KEYS) if key in args
        }
        if not changes:
            raise JobError("action 'update' needs at least one field to change (name, a schedule, message or prompt)")
        current = store.get(args["id"])
        schedule = {} if any(key in changes for key in SCHEDULE_KEYS) else _schedule_of(current)
        _check_interval(
            {**schedule, **changes, "kind": "prompt" if "prompt" in changes else current.kind},
            limits,
            zone.key,
            now,
        )
        untrusted = context_untrusted(context)
        job = store.update(current.id, changes, now=now, untrusted=untrusted)
        marked = f" ({MARKED})" if untrusted else ""
        return (
            f"job {job.id} {job.name!r} updated{marked}: {job.schedule.describe()}; next run {describe_next(job, now)}"
        )
    if action in ("pause", "resume"):
        job = store.set_paused(store.get(args["id"]).id, action == "pause", now=now)
        state = "paused" if job.paused else f"resumed; next run {describe_next(job, now)}"
        return f"job {job.id} {job.name!r} {state}"
    if action == "remove":
        row = store.remove(store.get(args["id"]).id)
        return f"job {row.get('id')} {row.get('name')!r} removed"
    if action == "run_now":
        job = store.request_run(store.get(args["id"]).id, now)
        return f"job {job.id} {job.name!r} will run within a minute; its result arrives in this chat"
    raise JobError(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")


def _add(
    workspace: Workspace,
    store: JobStore,
    args: SkillArgs,
    context: SkillContext | None,
    limits: JobsSettings | None,
    now: datetime,
) -> str:
    """``add``: the job stored, once for the message the turn answers (the turn run again after a crash adds no
    second job: each would run; the ledger of jobs added)."""
    need(args, "add", "name")
    zone = context_zone(context).key
    fields = _fields(args, zone)
    fields["chat_id"] = context.chat_id if context is not None else None
    # Where it was made: a job made in a Telegram forum topic of the owner's chat runs in that topic.
    fields["conversation_id"] = context.conversation_id if context is not None else ""
    _check_interval(fields, limits, zone, now)
    untrusted = context_untrusted(context)

    def add(key: str) -> tuple[str, JsonObject]:
        # The ledger record's key in the row: a replay after a kill between them looks for it.
        job = store.add(
            {**fields, "once_key": key},
            untrusted=untrusted,
            max_jobs=limits.max_jobs if limits is not None else None,
            now=now,
        )
        marked = f" ({MARKED})" if untrusted else ""
        said = (
            f"job {job.id} {job.name!r} added{marked}: {job.schedule.describe()}, {job.kind} "
            f"{job.text[:80]!r}; next run {describe_next(job, now)}"
        )
        return said, {"id": job.id}

    return made_once(workspace, ADDED, context, _adding(args), add, "job", _stored(store))


def done_before(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> bool:
    """This add was made before for the turn's message (a replay after a crash): nothing will be added, so the
    owner is not asked about it again."""
    if args.get("action") != "add":
        return False
    return made_before(workspace, ADDED, context, _adding(args), _stored(JobStore(workspace)))


def _stored(store: JobStore) -> Callable[[str], bool]:
    """Whether the store holds the job added under a ledger record's key (a kill may come between them)."""
    return lambda key: any(row.get("once_key") == key for row in store.rows())


def _adding(args: SkillArgs) -> Action:
    """A job added, as the ledger matches it: the turn's nth add is its nth, whatever its words."""
    return Action("add", "", {key: args.get(key) for key in ("name", *SCHEDULE_KEYS, *PAYLOAD_KEYS)}, {})


def _fields(args: JsonObject, default_tz: str) -> JsonObject:
    """The new job's row fields; JobError with the form and an example for what is missing or doubled."""
    schedules = [key for key in SCHEDULE_KEYS if args.get(key) not in (None, "")]
    if len(schedules) != 1:
        got = "none" if not schedules else " and ".join(schedules)
        raise JobError(
            f"action 'add' needs exactly one schedule, got {got}; give one of: " + "; ".join(EXAMPLES.values())
        )
    payloads = [key for key in PAYLOAD_KEYS if str(args.get(key) or "").strip()]
    if len(payloads) != 1:
        got = "none" if not payloads else " and ".join(payloads)
        raise JobError(
            f"action 'add' needs exactly one of message or prompt, got {got}: message is sent as it is "
            '(e.g. "Pay the rent"), prompt is answered by the assistant at each run (e.g. "Summarise today\'s mail")'
        )
    fields = {key: args[key] for key in ("name", "timezone", "catch_up", schedules[0], payloads[0]) if key in args}
    fields.setdefault("timezone", default_tz)
    return fields


def _schedule_of(job: Job) -> JsonObject:
    schedule = job.schedule
    if schedule.kind == "cron":
        return {"cron": schedule.cron}
    if schedule.kind == "every":
        return {"every_minutes": schedule.minutes}
    assert schedule.at is not None  # a one-time schedule has its moment (assistant_framework/jobs/job.py)
    return {"at": schedule.at.strftime("%Y-%m-%d %H:%M")}


def _check_interval(fields: JsonObject, limits: JobsSettings | None, default_tz: str, now: datetime) -> None:
    """A prompt job runs no more often than ``jobs.min_prompt_interval_minutes`` (each run is a model turn)."""
    is_prompt = "prompt" in fields or fields.get("kind") == "prompt"
    if not is_prompt or limits is None:
        return
    fields = {key: value for key, value in fields.items() if key != "message"}
    from assistant_framework.jobs.job import schedule_of

    schedule = schedule_of({**fields, "created_at": None}, default_tz)
    gap = shortest_gap(schedule, now)
    least = timedelta(minutes=limits.min_prompt_interval_minutes)
    if gap is not None and gap < least:
        minutes = int(gap.total_seconds() // 60)
        raise JobError(
            f"a prompt job may run at most every {limits.min_prompt_interval_minutes} minutes "
            f"(jobs.min_prompt_interval_minutes); this schedule runs every {minutes} minute(s). "
            f'Use a longer schedule, e.g. every_minutes {limits.min_prompt_interval_minutes} or cron "0 * * * *", '
            "or a message job (no model call)"
        )


class BrokenRow(TypedDict):
    """A row of ``jobs/jobs.json`` that cannot be read, in ``list``'s answer: why."""

    broken_row: str


def _shown(row: JobRow) -> JobRow:
    shown = row.copy()
    shown.pop("last_planned", None)
    return shown
