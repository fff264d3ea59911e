"""The doctor's workspace checks: the folder is a workspace and writable, the disk's free space, the
memory index's health, the owner's memory files that are JSON and do not parse (edited by hand)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path

from assistant_framework.hints import CLI
from assistant_framework.memory.sources import HAND_EDITED
from assistant_framework.workspace import WORKSPACE_MARKER
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, WARN, Check, Context

MIN_FREE_BYTES = 200 * 1024 * 1024
LOW_FREE_BYTES = 2 * 1024 * 1024 * 1024


def check_workspace(ctx: Context) -> list[Check]:
    path = ctx.workspace_path
    if not (path / WORKSPACE_MARKER).is_dir():
        return [
            Check(
                "workspace",
                FAIL,
                f"{path} is not a workspace",
                f"`make run` or `{CLI} setup` creates it; or pass --workspace",
            )
        ]
    checks = []
    try:
        with tempfile.NamedTemporaryFile(dir=path / WORKSPACE_MARKER, prefix=".doctor-"):
            pass
        checks.append(Check("workspace", OK, f"{path} is writable"))
    except OSError as exc:
        checks.append(
            Check("workspace", FAIL, f"{path} is not writable: {exc.strerror}", "fix the folder's owner or permissions")
        )
    free = shutil.disk_usage(path).free
    gib = free / 1024**3
    if free < MIN_FREE_BYTES:
        checks.append(
            Check(
                "disk space",
                FAIL,
                f"{gib:.2f} GiB free",
                "free some space: writes fail cleanly, but nothing new is remembered",
            )
        )
    elif free < LOW_FREE_BYTES:
        checks.append(Check("disk space", WARN, f"{gib:.2f} GiB free", "free some space soon"))
    else:
        checks.append(Check("disk space", OK, f"{gib:.1f} GiB free"))
    checks.append(_json_files_check(path))
    if not ctx.quick:
        checks.append(_index_check(path))
    return checks


def _json_files_check(path: Path) -> Check:
    """The owner's memory files in JSON (facts, tasks, contacts, reminders...: what people edit by hand) that do not
    parse: the bot keeps them as they are and stores nothing new in them until they are fixed."""
    broken: list[str] = []
    found = 0
    for top in HAND_EDITED:
        for file in sorted((path / top).rglob("*.json")) if (path / top).is_dir() else []:
            found += 1
            try:
                json.loads(file.read_bytes())
            except (OSError, ValueError) as exc:
                where = (
                    f"line {exc.lineno} column {exc.colno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else exc
                )
                broken.append(f"{file.relative_to(path)} ({where})")
    if broken:
        return Check(
            "memory files",
            WARN,
            "not valid JSON: " + "; ".join(broken),
            "fix it in an editor (or on the web page's Memory); nothing in it was changed, and nothing new is "
            "stored in it until then",
        )
    return Check("memory files", OK, f"{found} JSON file(s) read" if found else "no JSON files yet")


def _index_check(path: Path) -> Check:
    index = path / "memory" / "index.sqlite3"
    if not index.exists():
        return Check("memory index", OK, "not built yet (built on first use)")
    try:
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=5) as conn:
            answer = conn.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.Error as exc:
        answer = str(exc)
    if answer != "ok":
        return Check(
            "memory index",
            WARN,
            f"damaged ({answer[:120]})",
            f"`{CLI} memory reindex` rebuilds it from the files (nothing is lost)",
        )
    return Check("memory index", OK, f"healthy ({index.stat().st_size / 1024:.0f} KiB)")
