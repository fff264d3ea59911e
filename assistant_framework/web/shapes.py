"""The JSON bodies of the owner's web page's API (``/api/...``), as the pages' handlers send them."""

from __future__ import annotations

from typing import TypedDict

from assistant_framework.collectors.manager import CollectorStatus
from assistant_framework.jobs import JobRow, RunLine
from assistant_framework.json_types import JsonObject, JsonSchema
from assistant_framework.spending.caps import CapRow
from assistant_framework.traces import UsageRow


class ConversationRow(TypedDict):
    """One chat of ``/api/conversations``: its days, newest first."""

    id: str
    days: list[str]
    last_day: str


class TurnRow(TypedDict, total=False):
    """One turn of a chat's day; a reply with what was recalled for it (None: its trace was pruned)."""

    time: str | None
    role: str | None
    text: str | None
    turn_id: str | None
    trace_id: str | None
    outside: bool  # outside content entered this turn
    recalled: list[JsonObject] | None  # the trace's recalled hits, each with ``outside``


class TraceRow(TypedDict):
    """One line of ``/api/traces``."""

    id: str
    time: str
    conversation: str
    model: str
    rounds: int
    prompt_tokens: int | None
    completion_tokens: int | None
    elapsed_s: float | None
    ok: bool


class CollectorRow(CollectorStatus):
    """One collector of ``/api/collectors``: its status and its last run."""

    source_errors: list[str]
    last_summary: str
    last_new: object  # the last run's new-item count as its runs.jsonl line has it
    running: bool
    runnable: bool


class ReminderRow(TypedDict):
    """One reminder of ``/api/reminders``."""

    id: str
    chat: str
    text: str
    due_at: str
    timezone: str
    status: str
    done_at: str
    error: str
    outside: bool


class Reminders(TypedDict):
    pending: list[ReminderRow]
    past: list[ReminderRow]


class UsageBody(TypedDict):
    """``/api/usage``: the /stats figures with every day present, and the runners' spending caps."""

    days: int
    by_day: dict[str, UsageRow]
    by_model: dict[str, UsageRow]
    total: UsageRow
    caps: list[CapRow]  # spending.cap_rows


class SkillRow(TypedDict):
    """One skill of ``/api/skills``, as ``skills inspect`` shows it."""

    name: str
    description: str
    args_schema: JsonSchema
    help: str
    capabilities: list[str]
    timeout_s: float
    source: str
    mcp_server: str | None


class SkillError(TypedDict):
    name: str
    error: str


class Skills(TypedDict):
    skills: list[SkillRow]
    errors: list[SkillError]


class ReviewBody(TypedDict):
    """``/api/skills/install``'s review of a staged skill: what the CLI's review prints."""

    name: str
    description: str
    licence: str
    licence_files: list[str]
    source: str
    kind: str
    ref: str | None
    commit: str | None
    compatibility: str
    allowed_tools: list[str]
    capabilities: list[str]
    files: list[tuple[str, int]]
    bytes: int
    scripts: list[tuple[str, str]]
    replaces: bool


class InstalledSkillRow(TypedDict):
    """One skill of ``.agents/skills/`` and where it came from (None: not installed from a source)."""

    name: str
    source: str | None
    ref: str | None
    commit: str | None
    installed: str | None


class HitBody(TypedDict):
    """One hit of ``/api/memory``: a memory search hit, whether its text came from outside, and where it opens."""

    source: str
    path: str
    ref: str
    time: str | None
    snippet: str
    score: float
    conversation: str | None
    outside: bool
    link: str


class JobWithRuns(JobRow):
    """One job of ``/api/jobs``: its row and its newest runs, newest first."""

    runs: list[RunLine]


class JobsBody(TypedDict):
    """``/api/jobs``: every readable job, and one sentence per row of ``jobs/jobs.json`` that cannot be read."""

    jobs: list[JobWithRuns]
    problems: list[str]


class DraftRow(TypedDict):
    """One drafted skill of ``/api/skills/drafts``: its ``SKILL.md``, or why it does not load (``error``)."""

    name: str
    description: str
    instructions: str
    error: str | None


class DraftsBody(TypedDict):
    """``/api/skills/drafts``: every draft waiting for the owner."""

    drafts: list[DraftRow]
