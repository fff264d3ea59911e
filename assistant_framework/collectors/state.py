"""Persisted per-collector state in ``state/collectors/<name>.json``.

The runner owns the schedule fields; the collector owns ``cursor`` (last seen
ids, ETags, IMAP UIDVALIDITY/UID) through :func:`load_cursor`/:func:`save_cursor`.
Both update the same file with a locked read-modify-write, so neither loses
the other's fields.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

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
    cursor: dict = field(default_factory=dict)


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


def load_cursor(workspace: Workspace, name: str) -> dict:
    """The collector's own cursor (empty dict on first run)."""
    return dict(load_state(workspace, name).cursor)


def save_cursor(workspace: Workspace, name: str, cursor: dict) -> None:
    """Replace the collector's cursor; never put secrets in it."""
    update_state(workspace, name, cursor=dict(cursor))
