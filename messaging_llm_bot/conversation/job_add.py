"""A job's fields as options, for ``assistant jobs add`` and ``/jobs add`` in any chat: one parser, and the
checks are ``JobStore.add``'s (schedule, payload, zone, the limits), as for the ``jobs`` skill (docs/jobs.md)."""

from __future__ import annotations

import argparse
import shlex
from datetime import datetime
from typing import Any

from assistant_framework.config.settings.jobs import JobsSettings
from assistant_framework.jobs import CATCH_UP, JobError, JobStore, describe_next
from assistant_framework.json_types import JsonObject
from assistant_framework.workspace import Workspace

USAGE = (
    '/jobs add NAME (--cron EXPR | --every-minutes N | --at "YYYY-MM-DD HH:MM") (--message TEXT | --prompt TEXT) '
    "[--timezone ZONE]"
)
MAX_LINE_CHARS = 8_000  # a command line longer than any job's name, schedule and payload together


def add_job_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """A job's schedule and payload options (one of each; ``required`` for ``add``), its zone and catch_up."""
    when = parser.add_mutually_exclusive_group(required=required)
    when.add_argument("--cron", metavar="EXPR", help='five fields "minute hour day month weekday", e.g. "30 7 * * 1-5"')
    when.add_argument("--every-minutes", type=int, metavar="N", help="every N minutes, counted from now")
    when.add_argument("--at", metavar="'YYYY-MM-DD HH:MM'", help="once, at this local time")
    what = parser.add_mutually_exclusive_group(required=required)
    what.add_argument("--message", metavar="TEXT", help="text sent as it is (no model call)")
    what.add_argument("--prompt", metavar="TEXT", help="a request the assistant answers at each run")
    parser.add_argument("--timezone", metavar="ZONE", help="an IANA zone (default: runtime.timezone)")
    parser.add_argument("--catch-up", choices=CATCH_UP, help="runs missed while the bot was down (default: once)")


def job_fields(args: argparse.Namespace, default_tz: str) -> JsonObject:
    """The row ``JobStore.add`` checks and stores, from the parsed options."""
    return {
        "name": args.name,
        "cron": args.cron,
        "every_minutes": args.every_minutes,
        "at": args.at,
        "message": args.message,
        "prompt": args.prompt,
        "timezone": args.timezone or default_tz,
        "catch_up": args.catch_up,
    }


class _JobRefused(Exception):
    """The chat line is no valid ``/jobs add``: the sentence says why."""


class _ChatParser(argparse.ArgumentParser):
    """argparse that raises instead of printing to stderr and exiting (a chat has no stderr)."""

    def error(self, message: str) -> Any:
        raise _JobRefused(message)


def _chat_parser() -> _ChatParser:
    parser = _ChatParser(prog="/jobs add", add_help=False, allow_abbrev=False)
    parser.add_argument("name")
    add_job_options(parser, required=True)
    return parser


def chat_add(
    workspace: Workspace, conversation_id: str, line: str, now: datetime, default_tz: str, limits: JobsSettings
) -> str:
    """``/jobs add ...`` typed in the owner's chat: the job runs in this chat; one sentence either way."""
    if len(line) > MAX_LINE_CHARS:
        return f"That line is {len(line)} characters; a job's fields fit in {MAX_LINE_CHARS}. Usage: {USAGE}"
    try:
        args = _chat_parser().parse_args(shlex.split(line))
    except (_JobRefused, ValueError) as err:  # ValueError: shlex on an unclosed quote
        return f"Job not added: {err}. Usage: {USAGE}"
    fields = job_fields(args, default_tz)
    fields["chat_id"] = conversation_id  # its channel (routes.channel_of) and the chat its runs go to
    fields["conversation_id"] = conversation_id
    store = JobStore(workspace, default_tz, limits)
    try:
        job = store.add(fields, max_jobs=limits.max_jobs, now=now)
    except JobError as err:
        return f"Job not added: {err}."
    return (
        f"Job {job.id} ({job.name}) added: {job.schedule.describe()}, {job.kind}; next run {describe_next(job, now)}."
    )
