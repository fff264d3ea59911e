"""The data behind each page (plain dicts and lists: the JSON API returns exactly these)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from ..config.settings import Settings
from ..json_types import JsonObject
from ..mcp import McpSkills
from ..memory.log import CONVERSATIONS_DIR
from ..memory.recall import OUTSIDE_SOURCE_PREFIXES
from ..spending import CapRow, SpendingLedger, cap_rows
from ..stores.provenance import is_untrusted
from ..stores.records import Reminder
from ..traces import TraceRecord, TraceStore, UsageRow
from ..workspace import Workspace, WorkspacePathError
from . import window
from .parts import Parts
from .shapes import (
    CollectorRow,
    ConversationRow,
    ReminderRow,
    Reminders,
    SkillError,
    SkillRow,
    Skills,
    TraceRow,
    TurnRow,
    UsageBody,
)

_DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.jsonl$")


# -- conversations -------------------------------------------------------------


def conversations(workspace: Workspace) -> list[ConversationRow]:
    """Each chat with its days (newest first) and turn count."""
    chats: dict[str, list[str]] = {}
    for rel in workspace.list(f"{CONVERSATIONS_DIR}/*/*.jsonl"):
        _, chat, name = rel.split("/")
        match = _DAY_FILE.match(name)
        if match:
            chats.setdefault(chat, []).append(match.group(1))
    out = [
        ConversationRow(id=chat, days=sorted(days, reverse=True), last_day=max(days)) for chat, days in chats.items()
    ]
    return sorted(out, key=lambda c: c["last_day"], reverse=True)


def conversation_day(workspace: Workspace, chat: str, day: str, traces: TraceStore) -> list[TurnRow]:
    """The turns of one chat's day; each reply with what was recalled for it (from its trace)."""
    if "/" in chat or chat.startswith(".") or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        raise KeyError(f"no conversation {chat!r} on {day!r}")
    rel = f"{CONVERSATIONS_DIR}/{chat}/{day}.jsonl"
    try:
        found = workspace.exists(rel)
    except WorkspacePathError:  # a control character in the name (``%00`` in the address)
        found = False
    if not found:
        raise KeyError(f"no conversation {chat!r} on {day!r}")
    turns = []
    for row in workspace.read_jsonl(rel):
        turn = TurnRow(
            time=row.get("time"),
            role=row.get("role"),
            text=row.get("text"),
            turn_id=row.get("turn_id"),
            trace_id=row.get("trace_id"),
        )
        turn["outside"] = is_untrusted(row)  # outside content entered this turn (a forward, an attachment...)
        if row.get("role") == "assistant" and row.get("trace_id"):
            try:
                trace = traces.load(str(row["trace_id"]))
                turn["recalled"] = labelled_hits(trace.get("recalled") or [])
            except (KeyError, ValueError):
                turn["recalled"] = None  # the trace was pruned: what was recalled is no longer known
        turns.append(turn)
    return turns


def hit_is_outside(hit: JsonObject) -> bool:
    """Whether a found or recalled hit's text came from outside (``memory.recall.is_outside`` for a hit
    kept as a dict: a collector item, or a turn, record or file marked ``untrusted``)."""
    return str(hit.get("source") or "").startswith(OUTSIDE_SOURCE_PREFIXES) or bool(hit.get("outside"))


def labelled_hits(hits: list[JsonObject]) -> list[JsonObject]:
    """Hits as dicts, each with ``outside`` set as the page labels it."""
    return [{**hit, "outside": hit_is_outside(hit)} for hit in hits if isinstance(hit, dict)]


# -- traces --------------------------------------------------------------------


def trace_list(traces: TraceStore, limit: int = 50) -> list[TraceRow]:
    """Newest traces first, with the figures of ``trace list`` plus duration."""
    rows: list[TraceRow] = []
    for trace_id in list(reversed(traces.ids()))[:limit]:
        try:
            trace = traces.load(trace_id)
        except (KeyError, ValueError):
            continue
        usage = trace.get("usage") or {}
        rows.append(
            {
                "id": trace_id,
                "time": str(trace.get("time", "")),
                "conversation": str(trace.get("conversation", "")),
                "model": str(trace.get("model") or ""),
                "rounds": int(trace.get("rounds") or 0),
                "prompt_tokens": usage.get("prompt_tokens"),
                "completion_tokens": usage.get("completion_tokens"),
                "elapsed_s": trace.get("elapsed_s"),
                "ok": bool(trace.get("ok", True)),
            }
        )
    return rows


def section_rows(trace: TraceRecord) -> list[tuple[str, float]]:
    """(section, characters) of a trace's prompt, in prompt order."""
    sizes = trace.get("section_sizes") or {}
    return [
        (str(name), float((size or {}).get("chars") or 0)) for name, size in sizes.items() if isinstance(size, dict)
    ]


# -- collectors ------------------------------------------------------------------


def collector_rows(parts: Parts, start: int = 0, size: int | None = None) -> window.Window[CollectorRow]:
    """``collectors status`` plus the last run's per-source problems and whether a run is going on: of every
    collector, or of ``size`` from ``start`` on (a page: window.py; the others' run logs are not read)."""
    manager = parts.collectors
    statuses = manager.status() if manager is not None else []
    shown = window.window(statuses, start, size) if size else window.Window(0, statuses, len(statuses))
    runner = parts.collector_runner
    rows: list[CollectorRow] = []
    for row in shown.rows:
        # Its end only, read from the end (the log holds months of runs); two lines: a torn last one is skipped.
        runs = (
            parts.workspace.read_jsonl(f"collectors/{row['name']}/runs.jsonl", last=2)
            if row["outcome"] != "load-error"
            else []
        )
        last = runs[-1] if runs else {}
        extra = {
            "source_errors": list(last.get("errors") or []),
            "last_summary": last.get("summary") or "",
            "last_new": last.get("new"),
            "running": bool(runner and runner.is_running(row["name"])),
            "runnable": row["outcome"] != "load-error",
        }
        rows.append(cast(CollectorRow, {**row, **extra}))  # the status row and these keys: CollectorRow
    return window.Window(shown.first, rows, shown.total, shown.size)


# -- reminders ---------------------------------------------------------------------

#: Reminders no longer pending shown at most (the newest), under the pending ones.
PAST_REMINDERS = 100


def reminder_rows(workspace: Workspace) -> Reminders:
    """Every chat's reminders: the pending ones by due time, then the newest ``PAST_REMINDERS`` others
    (delivered, failed, cancelled), each with whether it was written from outside content."""
    from ..stores.reminders import ReminderStore

    def row(reminder: Reminder) -> ReminderRow:
        return {
            "id": str(reminder.get("id", "")),
            "chat": str(reminder.get("chat_id", "")),
            "text": str(reminder.get("text", "")),
            "due_at": str(reminder.get("due_at", "")),
            "timezone": str(reminder.get("timezone", "")),
            "status": str(reminder.get("status", "")),
            "done_at": str(reminder.get("delivered_at") or reminder.get("failed_at") or ""),
            "error": str(reminder.get("error") or ""),
            "outside": is_untrusted(reminder),
        }

    rows = ReminderStore(workspace).list()
    pending = [row(r) for r in rows if r.get("status") == "pending"]
    past = [row(r) for r in reversed(rows) if r.get("status") != "pending"][:PAST_REMINDERS]
    return Reminders(pending=pending, past=past)


# -- usage -------------------------------------------------------------------------


def usage(
    traces: TraceStore, days: int = 30, now: datetime | None = None, settings: Settings | None = None
) -> UsageBody:
    """The /stats figures over ``days`` days, with every day present (zeros where nothing ran), and the runners'
    spending caps (``caps``: what is used and when it resets) when ``settings`` are given."""
    moment = now or datetime.now(UTC)
    stats = traces.stats(days=days, now=moment)
    by_day = stats["by_day"]
    all_days = [(moment - timedelta(days=days - 1 - i)).date().isoformat() for i in range(days)]
    empty: UsageRow = {
        "turns": 0,
        "requests": 0,
        "model_s": 0.0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_tokens": 0,
        "reasoning_tokens": 0,
        "unreported": 0,
    }
    return UsageBody(
        days=days,
        by_day={d: by_day.get(d, empty) for d in all_days},
        by_model=stats["by_model"],
        total=stats["total"],
        caps=spending_caps(traces.workspace, settings) if settings is not None else [],
    )


def spending_caps(workspace: Workspace, settings: Settings) -> list[CapRow]:
    """The cap rows of every runner with caps, read from the ledger the bot writes (state/spending.json)."""
    if not any(r.limits.any for r in settings.llm.runners):
        return []
    return cap_rows(SpendingLedger(workspace, settings.runtime.timezone), settings.llm.runners)


# -- skills --------------------------------------------------------------------------


def skill_rows(parts: Parts) -> Skills:
    """What ``skills inspect`` shows of each skill (an MCP tool with its server), and the load errors."""
    manager = parts.skills
    manager.ensure_loaded()  # before the servers are asked which skills they offer
    server_of = {
        skill: status.name
        for source in manager.sources
        if isinstance(source, McpSkills)
        for status in source.statuses()
        for skill in status.skills
    }
    skills: list[SkillRow] = []
    for name, skill in sorted(manager.skills.items()):
        skills.append(
            {
                "name": name,
                "description": skill.description,
                "args_schema": skill.args_schema,
                "help": skill.help_text or "",
                "capabilities": list(skill.capabilities),
                "timeout_s": manager.timeout_for(name),
                "source": skill.where if skill.source_path is None else str(skill.source_path),
                "mcp_server": server_of.get(name),
            }
        )
    errors = [SkillError(name=e.name, error=str(e.error)) for e in manager.errors]
    return Skills(skills=skills, errors=errors)


def search_sources() -> list[str]:
    """Source names offered by the search form (collector:* and skill:* are typed in)."""
    return [
        "conversation",
        "episodes",
        "profile",
        "notes",
        "tasks",
        "facts",
        "learnings",
        "contacts",
        "birthdays",
        "routines",
        "reminders",
        "documents",
    ]


def jsonable(value: Any) -> Any:
    """Dataclasses and paths as plain JSON values."""
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {k: jsonable(v) for k, v in vars(value).items()}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
