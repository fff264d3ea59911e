"""Persisted per-collector state in ``state/collectors/<name>.json``.

The runner owns the schedule fields; the collector owns ``cursor`` (last seen
ids, ETags, IMAP UIDVALIDITY/UID) through :func:`load_cursor`/:func:`save_cursor`.
Both update the same file with a locked read-modify-write, so neither loses
the other's fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from assistant_framework.collectors.spec import CollectorCursor, SourceState
from assistant_framework.workspace import Workspace

STATE_DIR = "state/collectors"


@dataclass
class CollectorState:
    """What the runner remembers about one collector between runs and restarts."""

    name: str
    last_start: str | None = None
    last_end: str | None = None
    duration_s: float | None = None
    outcome: str | None = None  # "ok" | "error" | "timeout"
    error: str | None = None
    next_run: str | None = None
    consecutive_failures: int = 0
    runs: int = 0
    cursor: CollectorCursor = field(default_factory=dict)
    # Per source (feed URL, calendar name, mail folder): ok, last_ok, last_error, last_error_at, failures, items,
    # skipped.
    sources: dict[str, SourceState] = field(default_factory=dict)


def state_path(name: str) -> str:
    return f"{STATE_DIR}/{name}.json"


def load_state(workspace: Workspace, name: str) -> CollectorState:
    """The stored state, or a fresh one when missing or unreadable."""
    try:
        raw = workspace.read_json(state_path(name), default=None)
    except ValueError:
        raw = None
    if not isinstance(raw, dict):
        return CollectorState(name=name)
    known = {f.name for f in fields(CollectorState)}
    values = {k: v for k, v in raw.items() if k in known}
    values["name"] = name
    if not isinstance(values.get("cursor"), dict):
        values["cursor"] = {}
    if not isinstance(values.get("sources"), dict):
        values["sources"] = {}
    try:
        return CollectorState(**values)
    except TypeError:
        return CollectorState(name=name)


def update_state(workspace: Workspace, name: str, **changes: Any) -> CollectorState:
    """Apply field changes under the file's lock and write atomically."""
    with workspace.lock(state_path(name)):
        state = load_state(workspace, name)
        for key, value in changes.items():
            setattr(state, key, value)
        workspace.write_json(state_path(name), asdict(state))
    return state


def load_cursor(workspace: Workspace, name: str) -> CollectorCursor:
    """The collector's own cursor (empty dict on first run)."""
    return dict(load_state(workspace, name).cursor)


def save_cursor(workspace: Workspace, name: str, cursor: CollectorCursor) -> None:
    """Replace the collector's cursor; never put secrets in it."""
    update_state(workspace, name, cursor=dict(cursor))


def merge_sources(previous: Mapping[str, object], report: Mapping[str, object], when: str) -> dict[str, SourceState]:
    """The per-source record after a run that reported ``report`` (sources it no longer lists are dropped)."""
    merged: dict[str, SourceState] = {}
    for name, result in report.items():
        if not isinstance(result, dict):
            continue
        before = value if isinstance(value := previous.get(name), dict) else {}
        row = SourceState(
            ok=bool(result.get("ok")),
            last_ok=before.get("last_ok"),
            last_error=before.get("last_error"),
            last_error_at=before.get("last_error_at"),
            failures=0,
        )
        if row["ok"]:
            row["last_ok"] = when
            row["items"] = result.get("items", 0)
            skipped = result.get("skipped") or []
            if skipped:
                row["skipped"] = skipped
            if result.get("warnings"):
                row["warnings"] = result["warnings"]
        else:
            row["last_error"] = str(result.get("error") or "failed")
            row["last_error_at"] = when
            row["failures"] = int(before.get("failures", 0)) + 1
        merged[str(name)] = row
    return merged
