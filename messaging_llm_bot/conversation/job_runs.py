"""Runs of scheduled jobs (docs/jobs.md): each due run enters the durable inbox as the job's own item.

``JobScheduler`` (one per process: conversation/job_router.py) looks at ``jobs/jobs.json`` on its job queue
(every ``jobs.poll_seconds``,
sooner when a run is due sooner), plans the due runs with the job's ``catch_up``
(``assistant_framework.jobs.due_runs``) and accepts each into the inbox under its run id
(``job:<id>:<planned time>``): the inbox takes an id once, so two runs of one planned time never both
happen, and an item a crash left is answered at the next start like any message. Only then is the job's
``last_planned`` moved on. The job's channel answers the item in the owner's chat queue: a ``message`` job's
text is the reply, a ``prompt`` job's turn (the owner's policy, no confirmation possible) makes it; the
reply goes out through the ledger and the run gets its line in ``jobs/runs.jsonl``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from assistant_framework.config.settings import Settings
from assistant_framework.hints import CLI
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.inbox.item import InboxPayload
from assistant_framework.jobs import JobStore, RunLine, RunLog
from assistant_framework.schedules import as_utc, from_iso, to_iso, zone
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.agent.turn import TurnResult, reply_text
from messaging_llm_bot.conversation.markup import escape_markdown
from messaging_llm_bot.conversation.pool import GIVEN_UP, TurnPool
from messaging_llm_bot.conversation.reminders import FROM_OUTSIDE
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.llm.slots import background_calls

log = logging.getLogger(__name__)

#: The payload key of a job run's inbox item (a chat message's payload never has it).
JOB_KEY = "job_run"
#: The ``kind`` of the item that tells the owner of rows that do not run (delivered like a run, once).
NOTICE = "notice"
#: Which problems the owner was told of (their hashes): each is told once, and again only after it was gone.
TOLD_FILE = "state/jobs-problems-told.json"
#: Problems one notice lists (the rest are counted: /jobs names them).
NOTICE_PROBLEMS = 5


@dataclass(frozen=True)
class JobRun:
    """One run of a job as its inbox item holds it: what the job was when the run was queued."""

    run_id: str
    job_id: str
    name: str
    kind: str  # "message" | "prompt" | "notice" (rows that do not run, told to the owner)
    text: str
    planned: str  # ISO, UTC
    late: bool
    timezone: str
    untrusted: bool = False
    requested: bool = False  # run_now
    hook: bool = False  # made by a call to a hook (conversation/hook_runs.py), not by the schedule

    def payload(self) -> InboxPayload:
        return {JOB_KEY: asdict(self)}

    @classmethod
    def of(cls, item: InboxItem) -> JobRun | None:
        """The run an inbox item holds, or None for a chat message."""
        data = item.payload.get(JOB_KEY)
        if not isinstance(data, dict):
            return None
        try:
            return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})
        except TypeError:
            return None

    @property
    def icon(self) -> str:
        """What its reply starts with: a bell for a hook's run, a calendar for a scheduled one."""
        return "🔔" if self.hook else "🗓"

    @property
    def planned_at(self) -> datetime:
        return from_iso(self.planned) or datetime.now(UTC)

    def late_note(self, started: datetime) -> str:
        """``(late: planned 07:30, run 09:12)`` for a run made after downtime, else ""."""
        if not self.late:
            return ""
        tz = zone(self.timezone)
        planned, now = self.planned_at.astimezone(tz), as_utc(started).astimezone(tz)
        form = "%H:%M" if planned.date() == now.date() else "%Y-%m-%d %H:%M"
        return f"(late: planned {planned.strftime(form)}, run {now.strftime('%H:%M')})"


def is_job_item(item: InboxItem) -> bool:
    """True for the inbox item of a job run."""
    return JOB_KEY in item.payload


def message_reply(run: JobRun, started: datetime) -> str:
    """A ``message`` job's text as it is sent (Markdown-escaped: shown as typed), with the late note."""
    lines = [f"{run.icon} {run.text.strip()}"]
    if run.untrusted:
        lines.append(FROM_OUTSIDE)
    if note := run.late_note(started):
        lines.append(note)
    return escape_markdown("\n".join(lines))


def prompt_reply(run: JobRun, started: datetime, reply: str) -> str:
    """A ``prompt`` job's reply under a header naming the job (and the late note)."""
    note = run.late_note(started)
    head = f"{run.icon} **{escape_markdown(run.name)}**" + (f" {escape_markdown(note)}" if note else "")
    return f"{head}\n\n{reply}"


@dataclass
class JobReply:
    """What a run made: the reply to deliver (None: nothing to deliver) and how the run is recorded."""

    text: str | None
    ok: bool = True
    error: str | None = None
    outcome: str | None = None


async def make_job_reply(
    runtime: Runtime,
    pool: TurnPool,
    inbox: Inbox,
    run: JobRun,
    item: InboxItem,
    started: datetime,
    *,
    chat_id: int | str | None,
    user_id: int | str | None,
) -> JobReply:
    """The run's reply, recorded in the inbox before any delivery (a crash resends it, never makes it again):
    the reply recorded before, a ``message`` job's text, or a ``prompt`` job's turn in the owner's own chat
    (the owner's policy, no confirmation, traced as a job turn; skipped past the day's budget)."""
    if item.reply is not None:
        return JobReply(item.reply)
    if run.kind == NOTICE:
        made = JobReply(run.text, outcome=NOTICE)  # made by the scheduler, Markdown already
    elif run.kind == "message":
        made = JobReply(message_reply(run, started))
    elif await asyncio.to_thread(over_budget, runtime.workspace, runtime.settings, started):
        log.warning("jobs: %s not run: %s", run.run_id, BUDGET_USED_UP)
        if await asyncio.to_thread(told_budget_today, runtime.workspace, runtime.settings, started):
            return JobReply(None, error=BUDGET_USED_UP, outcome="skipped")
        # The day's first run the budget stops: the owner hears it once, so a silent schedule is not a mystery.
        notice = budget_notice(run, runtime.settings.jobs.max_model_runs_per_day)
        await asyncio.to_thread(inbox.record_reply, item.item_id, notice)
        return JobReply(notice, error=BUDGET_USED_UP, outcome="skipped")
    else:
        incoming = AgentMessage(
            item.conversation_id,
            prompt_text(run),
            chat_id=chat_id,
            user_id=user_id,
            message_id=run.run_id,
            owner_chat=True,
            untrusted=run.untrusted,
            approve=None,
            job=run.job_id,
        )
        stop = functools.partial(runtime.agent.stop, item.conversation_id, GIVEN_UP)  # a stop that gives up on the run
        result = await pool.run(_background_turn, runtime.agent.handle, incoming, stop=stop)
        failed = None if result.ok else (result.reply or "the turn failed")
        made = JobReply(prompt_reply(run, started, reply_text(result)), result.ok, failed)
    text = made.text or ""
    await asyncio.to_thread(inbox.record_reply, item.item_id, text)
    return made


def _background_turn(handle: Callable[[AgentMessage], TurnResult], incoming: AgentMessage) -> TurnResult:
    # A prompt job's model calls are background work (llm.slots.background_calls): they yield to the chats'
    # turns and stop at 80 % of a runner's spending cap, keeping the rest for the owner's own turns.
    with background_calls():
        return handle(incoming)


def prompt_text(run: JobRun) -> str:
    """What a ``prompt`` job's turn asks the model (a hook's: its prompt, then the posted body quoted)."""
    if run.hook:
        return f"(Hook {run.name!r} was called from outside: do this now and answer for the owner.)\n{run.text}"
    return f"(Scheduled job {run.name!r}: do this now and answer for the owner.)\n{run.text}"


#: The ``error`` of a run the day's budget stopped (``jobs/runs.jsonl``): also how the day's first one is found.
BUDGET_USED_UP = "today's model runs for jobs are used up (jobs.max_model_runs_per_day)"


def budget_notice(run: JobRun, allowed: int) -> str:
    """What the owner is told at the day's first run the budget stops (later ones that day are silent)."""
    return (
        f"⏸ **{escape_markdown(run.name)}** did not run: today's {allowed} model runs for scheduled jobs are "
        "used up. Prompt jobs run again tomorrow; message jobs go on. To allow more: "
        f"`{CLI} config set jobs.max_model_runs_per_day {allowed * 2}`"
    )


def told_budget_today(workspace: Workspace, settings: Settings, now: datetime) -> bool:
    """True when a run was already stopped by the budget today (the owner was told then)."""
    tz = zone(settings.runtime.timezone)
    day = as_utc(now).astimezone(tz).date()
    for record in RunLog(workspace).records():
        started = from_iso(record.get("started"))
        if record.get("error") == BUDGET_USED_UP and started is not None and started.astimezone(tz).date() == day:
            return True
    return False


def over_budget(workspace: Workspace, settings: Settings, now: datetime) -> bool:
    """True when today's ``prompt`` job runs reached ``jobs.max_model_runs_per_day``."""
    tz = zone(settings.runtime.timezone)
    used = RunLog(workspace).model_runs_on(as_utc(now).astimezone(tz).date(), tz)
    return used >= settings.jobs.max_model_runs_per_day


def finish_run(
    workspace: Workspace,
    run: JobRun,
    *,
    started: datetime,
    ok: bool,
    message_ids: list[int],
    error: str | None = None,
    outcome: str | None = None,
) -> bool:
    """Record a run's line in ``jobs/runs.jsonl`` (once, also when a replay finishes it again) and count it
    for the job; True when this failure paused the job (the owner is told once)."""
    if run.kind == NOTICE:  # a notice about the file, not a run of a job: no line, nothing counted
        return False
    runs = RunLog(workspace)
    if runs.has_run(run.run_id):
        return False
    record: RunLine = {
        "run": run.run_id,
        "job": run.job_id,
        "name": run.name,
        "kind": run.kind,
        "planned": run.planned,
        "started": to_iso(started),
        "finished": to_iso(datetime.now(UTC)),
        "outcome": outcome or ("delivered" if ok else "failed"),
        **({"late": True} if run.late else {}),
        **({"requested": True} if run.requested else {}),
        **({"message_ids": message_ids} if message_ids else {}),
        **({"error": " ".join(str(error).split())[:300]} if error else {}),
    }
    runs.append(record)
    if outcome == "skipped":
        return False
    _failures, paused_now = JobStore(workspace).record_outcome(run.job_id, ok)
    return paused_now


def paused_notice(run: JobRun, error: str | None) -> str:
    """What the owner is told, once, when a job is paused after failing three times in a row."""
    why = f" The last error: {escape_markdown(' '.join(str(error).split())[:200])}." if error else ""
    return (
        f"⚠️ Job {escape_markdown(run.job_id)} ({escape_markdown(run.name)}) failed three times in a row and is "
        f"paused.{why} Resume it with `{CLI} jobs resume {escape_markdown(run.job_id)}` or ask me."
    )
