"""``jobs list|add|update|show|run|pause|resume|remove``: the jobs the assistant schedules (docs/jobs.md).

They work on the files (``jobs/jobs.json``, ``jobs/runs.jsonl``), so a running bot picks a change up at
its next look (``jobs.poll_seconds``); ``run`` asks it for one run now.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from assistant_framework.config import load_config
from assistant_framework.config.settings import Settings
from assistant_framework.hints import CLI
from assistant_framework.jobs import Job, JobError, JobStore, RunLog, as_row, describe_next
from assistant_framework.stores import NotFoundError
from assistant_framework.workspace import existing_workspace
from messaging_llm_bot.cli.config import Subparsers, add_config_option
from messaging_llm_bot.conversation.job_add import add_job_options, job_fields

HINT = f"`{CLI} jobs list` shows the ids"


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser("jobs", help="list, add, update, show, run, pause, resume and remove scheduled jobs")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    list_ = commands.add_parser("list", help="every job with its next run (exit 1 if a row cannot be read)")
    _common(list_)
    list_.set_defaults(func=cmd_list)
    add = commands.add_parser(
        "add", help="add a job without the model: a name, one schedule, one payload (checked as the skill checks)"
    )
    add.add_argument("name", help="the job's name (shown with each run)")
    _fields(add, required=True)
    add.set_defaults(func=cmd_add)
    update = commands.add_parser("update", help="change a job's name, schedule, payload, zone or catch_up")
    update.add_argument("id", help="the job's id (or its name)")
    update.add_argument("--name", help="a new name")
    _fields(update, required=False)
    update.set_defaults(func=cmd_update)
    for name, helptext, func in (
        ("show", "one job with its recent runs", cmd_show),
        ("run", "ask the running bot for one run now (at its next look)", cmd_run),
        ("pause", "stop a job's runs until resumed", cmd_pause),
        ("resume", "start a paused job again (runs missed while paused are not made)", cmd_resume),
        ("remove", "delete a job (its runs stay in jobs/runs.jsonl)", cmd_remove),
    ):
        command = commands.add_parser(name, help=helptext)
        command.add_argument("id", help="the job's id (or its name)")
        _common(command)
        command.set_defaults(func=func)


def _fields(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """A job's options (the chat's ``/jobs add`` has the same: conversation/job_add.py) and the common ones."""
    add_job_options(parser, required=required)
    _common(parser)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")
    add_config_option(parser)
    parser.add_argument("--json", action="store_true", help="JSON output")


def _store(args: argparse.Namespace, *, within_limits: bool = False) -> JobStore:
    """The jobs' store; ``within_limits``: its ``jobs()`` keeps what the scheduler runs (for ``list``), while
    ``show``, ``pause`` and ``remove`` reach every readable row, also one past the limits."""
    settings = Settings.from_config(load_config(args.config)) if Path(args.config).exists() else Settings()
    limits = settings.jobs if within_limits else None
    return JobStore(existing_workspace(args.workspace), settings.runtime.timezone, limits)


def _now() -> datetime:
    return datetime.now(UTC)


def cmd_list(args: argparse.Namespace) -> int:
    store = _store(args, within_limits=True)
    jobs, problems = store.jobs()
    now = _now()
    if args.json:
        print(
            json.dumps({"jobs": [as_row(job, now) for job in jobs], "problems": problems}, indent=2, ensure_ascii=False)
        )
        return 1 if problems else 0
    if not jobs and not problems:
        print("no jobs (the assistant adds them when asked; see docs/jobs.md)")
    for job in jobs:
        row = as_row(job, now)
        state = "paused" if job.paused else f"next {row['next_run'] or 'none (done)'}"
        print(f"{job.id:<5} {job.name[:30]:<30} {job.schedule.describe():<36} {job.kind:<7} {state}")
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 1 if problems else 0


def cmd_add(args: argparse.Namespace) -> int:
    """A job as the skill makes it (the same checks: schedule, payload, zone, the limits); exit 2 saying what to
    fix. It runs where a job written by hand runs: the owner's chat on the first configured channel."""
    store = _store(args, within_limits=True)
    fields = job_fields(args, store.default_tz)
    now = _now()
    limits = store.limits
    try:
        job = store.add(fields, max_jobs=limits.max_jobs if limits is not None else None, now=now)
    except JobError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(as_row(job, now), indent=2, ensure_ascii=False))
    else:
        when = describe_next(job, now)
        print(f"job {job.id} ({job.name}) added: {job.schedule.describe()}, {job.kind}; next run {when}")
    return 0


def cmd_update(args: argparse.Namespace) -> int:
    """Change what the options give (a new schedule replaces the old one and starts from now, a new payload the
    old one), checked as the skill checks; exit 2 saying what to fix, the job unchanged."""
    store = _store(args, within_limits=True)
    keys = ("name", "cron", "every_minutes", "at", "message", "prompt", "timezone", "catch_up")
    changes = {key: getattr(args, key) for key in keys if getattr(args, key) not in (None, "")}
    if not changes:
        print(
            "error: nothing to change: give --name, a schedule, --message or --prompt, --timezone or --catch-up",
            file=sys.stderr,
        )
        return 2
    job = _job(store, args.id)
    if job is None:
        return 2
    now = _now()
    try:
        job = store.update(job.id, changes, now=now)
    except JobError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(as_row(job, now), indent=2, ensure_ascii=False))
    else:
        when = describe_next(job, now)
        print(f"job {job.id} ({job.name}) updated: {job.schedule.describe()}, {job.kind}; next run {when}")
    return 0


def _job(store: JobStore, query: str) -> Job | None:
    try:
        return store.get(query)
    except NotFoundError as err:
        print(f"error: {err}; {HINT}", file=sys.stderr)
        return None


def cmd_show(args: argparse.Namespace) -> int:
    store = _store(args)
    job = _job(store, args.id)
    if job is None:
        return 2
    runs = RunLog(store.workspace).for_job(job.id)
    row = {**as_row(job, _now()), "runs": runs}
    if args.json:
        print(json.dumps(row, indent=2, ensure_ascii=False))
        return 0
    for key in ("id", "name", "schedule", "kind", "text", "catch_up", "paused", "failures", "next_run", "last_planned"):
        print(f"{key}: {row[key]}")
    print("runs:" if runs else "runs: none yet")
    for run in runs:
        detail = run.get("error") or run.get("reason") or ""
        print(f"  {run.get('planned')}  {run.get('outcome')}{' (late)' if run.get('late') else ''}  {detail}".rstrip())
    return 0


def _change(args: argparse.Namespace, verb: str) -> int:
    store = _store(args)
    job = _job(store, args.id)
    if job is None:
        return 2
    now = _now()
    if verb == "run":
        job = store.request_run(job.id, now)
        said = f"job {job.id} ({job.name}) will run at the running bot's next look"
    elif verb == "remove":
        store.remove(job.id)
        said = f"job {job.id} ({job.name}) removed"
    else:
        job = store.set_paused(job.id, verb == "pause", now=now)
        said = f"job {job.id} ({job.name}) {'paused' if job.paused else 'resumed'}"
    if args.json:
        print(json.dumps({"id": job.id, "done": verb, **({} if verb == "remove" else as_row(job, now))}, indent=2))
    else:
        print(said)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    return _change(args, "run")


def cmd_pause(args: argparse.Namespace) -> int:
    return _change(args, "pause")


def cmd_resume(args: argparse.Namespace) -> int:
    return _change(args, "resume")


def cmd_remove(args: argparse.Namespace) -> int:
    return _change(args, "remove")
