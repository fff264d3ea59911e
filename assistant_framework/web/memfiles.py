"""The memory's files as the page shows and edits them: which files, confinement, writes.

Only files the memory index knows (``memory.sources.source_for``) can be viewed; only the
owner's own memory (notes, tasks, facts ...) can be edited or deleted. A path is resolved
through ``Workspace`` first (no ``..``, no absolute path, no symlink out) and then judged by
where it really lands, so a link inside ``notes/`` that points at ``state/`` is refused.
Every write is atomic, goes to the audit log as the owner's and is re-indexed at once. The editor
carries the file's ``version`` (a hash of its bytes when it was opened): a save over a file that
changed since (the bot wrote it, or another tab saved) is refused, so nothing newer is lost unseen.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..json_types import JsonObject
from ..memory.recall import OUTSIDE_SOURCE_PREFIXES
from ..memory.sources import source_for
from ..policy import append_audit, audit_record
from ..redaction import secret_spans
from ..stores._common import JsonListFile, slugify
from ..stores.provenance import is_marked_text, json_marked
from ..stores.records import Fact
from ..workspace import Workspace, WorkspacePathError

#: Memory the owner edits on the page: category -> (folder glob for listing, what it is).
EDITABLE: dict[str, tuple[str, str]] = {
    "facts": ("facts/**/*", "structured facts, current and superseded"),
    "notes": ("notes/**/*", "one Markdown note per file"),
    "tasks": ("tasks/**/*", "tasks with due dates and status"),
    "learnings": ("learnings/**/*", "short learnings per topic, in every system prompt"),
    "contacts": ("contacts/**/*", "your people"),
    "birthdays": ("birthdays/**/*", "dates to remember"),
    "routines": ("routines/**/*", "your routines"),
    "profile": ("profile.md", "the profile of you in the system prompt"),
}
AUDIT_CHAT = "web:owner"
#: A memory file's path: at most this long, each name at most this many bytes (what file systems take).
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255


class MemoryFileRefused(ValueError):
    """A path the page must not show or change; the message says why."""


class EditConflict(ValueError):
    """The file changed since the editor was opened; nothing was written. ``current`` is its version now."""

    def __init__(self, message: str, current: str) -> None:
        super().__init__(message)
        self.current = current


@dataclass
class MemoryFile:
    """One memory file as shown: its text, and its records when it is a JSON list."""

    path: str
    source: str
    editable: bool
    text: str
    records: list[JsonObject] | None = None
    lines: list[str] = field(default_factory=list)
    #: ``file_version`` when it was read: the editor sends it back, so a save over a newer file is refused.
    version: str = ""
    #: False for bytes that are not UTF-8: shown with U+FFFD in their place, never saved from the editor.
    utf8: bool = True
    #: Written from outside content as a whole: collector output, or a file marked ``untrusted`` (front
    #: matter; every record of a JSON document). A record marked on its own is labelled by itself.
    outside: bool = False


def resolve(workspace: Workspace, rel: str, *, edit: bool = False) -> tuple[str, str]:
    """(canonical relative path, source) of a memory file; MemoryFileRefused otherwise."""
    if len(rel) > MAX_PATH_CHARS or any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in rel.split("/")):
        raise MemoryFileRefused(
            f"the path is too long (at most {MAX_PATH_CHARS} characters, {MAX_NAME_BYTES} bytes a name)"
        )
    try:
        real = workspace.relative(workspace.path(rel))
    except (WorkspacePathError, ValueError) as exc:
        raise MemoryFileRefused(str(exc)) from None
    source = source_for(real)
    if source is None:
        raise MemoryFileRefused(f"{rel!r} is not a memory file")
    if edit and source not in EDITABLE:
        raise MemoryFileRefused(f"{rel!r} ({source}) is not editable here; only {', '.join(EDITABLE)} are")
    return real, source


def file_version(workspace: Workspace, real: str) -> str:
    """A short hash of the file's bytes as they are on disk, ``"absent"`` while it does not exist."""
    try:
        data = workspace.path(real).read_bytes()
    except FileNotFoundError:
        return "absent"
    return _digest(data)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def list_files(workspace: Workspace, category: str) -> list[str]:
    """The files of one editable category, by name."""
    pattern = EDITABLE[category][0]
    if "*" not in pattern:
        return [pattern] if workspace.exists(pattern) else []
    return [rel for rel in workspace.list(pattern) if source_for(rel) == category]


def load(workspace: Workspace, rel: str) -> MemoryFile:
    """A memory file to show; MemoryFileRefused for anything else, FileNotFoundError when missing."""
    real, source = resolve(workspace, rel)
    data = workspace.path(real).read_bytes()
    try:
        text, utf8 = data.decode("utf-8"), True
    except UnicodeDecodeError:  # a hand-copied Latin-1 note: shown, not edited
        text, utf8 = data.decode("utf-8", "replace"), False
    records = None
    if real.endswith(".json"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and all(isinstance(row, dict) for row in parsed):
            records = parsed
        outside = isinstance(parsed, (dict, list)) and bool(parsed) and json_marked(parsed)
    else:
        outside = is_marked_text(text)
    outside = outside or source.startswith(OUTSIDE_SOURCE_PREFIXES)
    return MemoryFile(
        real, source, source in EDITABLE, text, records, text.splitlines(), _digest(data), utf8, outside=outside
    )


def check_content(rel: str, text: str) -> str | None:
    """Why this content cannot be saved (a JSON file must stay a JSON list of objects), else None."""
    if not rel.endswith(".json"):
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        return f"not valid JSON: {exc}"
    if not isinstance(data, list) or not all(isinstance(row, dict) for row in data):
        return "the file must hold a JSON list of objects"
    return None


def _after_change(workspace: Workspace, memory: Any, rel: str, action: str, details: JsonObject) -> None:
    append_audit(
        workspace,
        audit_record(
            chat=AUDIT_CHAT,
            skill="web",
            args={"action": action, "path": rel, **details},
            decision="owner",
            outcome="ok",
        ),
    )
    if memory is not None:
        memory.index.refresh()  # picks up the rewrite (or the deletion) now, not at the next pass


def save(
    workspace: Workspace, memory: Any, rel: str, text: str, secrets: Sequence[str] = (), expected: str | None = None
) -> str:
    """Write a memory file atomically (creating it), audit and re-index; returns the canonical path.

    A file that holds one of ``secrets`` is refused: the page shows it as ``***``, so saving the
    edit would replace the owner's secret with the mask. ValueError names what to do instead.
    With ``expected`` (the version the editor opened), EditConflict when the file is no longer that.
    """
    real, _ = resolve(workspace, rel, edit=True)
    problem = check_content(real, text)
    if problem:
        raise ValueError(problem)
    try:
        current = workspace.read_text(real, default="")
    except UnicodeDecodeError:  # the editor showed U+FFFD for those bytes: saving would replace them
        raise ValueError(
            f"{real} holds bytes that are not UTF-8; nothing was saved: convert it to UTF-8 on disk, or delete it"
        ) from None
    # A whole secret, or a piece of one the page also shows as ***.
    if secrets and current and secret_spans(current, secrets):
        raise ValueError(
            f"{real} holds a secret that this page shows as *** and would overwrite; "
            "nothing was saved: edit this file on disk"
        )
    text = text.replace("\r\n", "\n")
    if text and not text.endswith("\n"):
        text += "\n"
    with workspace.lock(real):  # the same lock the stores take, so a skill's edit is not lost
        current = file_version(workspace, real)
        if expected and expected != current:
            raise EditConflict(
                f"{real} was changed since you opened it (by the assistant or in another tab); "
                "nothing was saved: your text is kept below, the file as it is now under it",
                current,
            )
        workspace.write_text(real, text)
    _after_change(workspace, memory, real, "write", {"chars": len(text)})
    return real


def delete(workspace: Workspace, memory: Any, rel: str, expected: str | None = None) -> bool:
    """Delete a memory file, audit and re-index; False when it was already gone.

    With ``expected`` (the version the page showed), EditConflict when the file changed since.
    """
    real, _ = resolve(workspace, rel, edit=True)
    with workspace.lock(real):
        current = file_version(workspace, real)
        if expected and current not in (expected, "absent"):
            raise EditConflict(
                f"{real} was changed since you opened it (by the assistant or in another tab); "
                "nothing was deleted: open it again to see the new version",
                current,
            )
        gone = workspace.delete(real)
    if gone:
        _after_change(workspace, memory, real, "delete", {})
    return gone


def delete_record(workspace: Workspace, memory: Any, rel: str, record_id: str) -> bool:
    """Delete one record (by its ``id``) of a JSON list file; False when no record has that id."""
    real, _ = resolve(workspace, rel, edit=True)
    if not real.endswith(".json"):
        raise MemoryFileRefused(f"{real!r} holds no records")
    with JsonListFile[JsonObject](workspace, real).edit() as rows:
        keep = [row for row in rows if str(row.get("id")) != record_id]
        found = len(keep) != len(rows)
        rows[:] = keep
    if found:
        _after_change(workspace, memory, real, "delete-record", {"id": record_id})
    return found


def set_fact(workspace: Workspace, memory: Any, subject: str, attribute: str, value: str) -> tuple[Fact, str]:
    """Add or correct a fact as the owner's (``source: user``): the current value is superseded, kept in history."""
    from ..stores import FACTS_FILE, FactStore

    fact, action = FactStore(workspace).add(subject, attribute, value, source="user")
    if action != "duplicate":
        _after_change(workspace, memory, FACTS_FILE, "set-fact", {"id": fact["id"], "result": action})
    return fact, action


def empty(workspace: Workspace, rel: str) -> MemoryFile:
    """A memory file that does not exist yet, to be written (``profile.md``, a new topic).

    MemoryFileRefused otherwise.
    """
    real, source = resolve(workspace, rel, edit=True)
    return MemoryFile(
        real, source, True, "[]\n" if real.endswith(".json") else "", version=file_version(workspace, real)
    )


def load_or_empty(workspace: Workspace, rel: str) -> MemoryFile:
    """The file as it is now, or an empty one to write when it does not exist (yet, or any more)."""
    try:
        return load(workspace, rel)
    except FileNotFoundError:
        return empty(workspace, rel)


def new_note_path(workspace: Workspace, title: str) -> str:
    """A free ``notes/<slug>.md`` for a new note's title."""
    slug = slugify(title, "note")
    rel, n = f"notes/{slug}.md", 2
    while workspace.exists(rel):
        rel, n = f"notes/{slug}-{n}.md", n + 1
    return rel


def unreadable(workspace: Workspace, files: list[str]) -> list[str]:
    """Why each JSON file of ``files`` (a category's, ``list_files``) cannot be read (edited by hand into invalid
    JSON, say): the page says so instead of "No facts yet.", which read as the facts lost. The file itself is left
    as it is."""
    problems: list[str] = []
    for rel in files:
        if rel.endswith(".json"):
            try:
                JsonListFile[JsonObject](workspace, rel).load()
            except ValueError as exc:
                problems.append(str(exc))
    return problems


def facts_view(workspace: Workspace) -> list[JsonObject]:
    """Every fact of ``facts/facts.json`` (current first, then superseded), with its file: any JSON list file
    in ``facts/``, its rows as the owner left them."""
    out: list[JsonObject] = []
    for rel in list_files(workspace, "facts"):
        try:
            rows: list[JsonObject] = JsonListFile[JsonObject](workspace, rel).load()
        except ValueError:
            continue
        out.extend({**row, "_path": rel} for row in rows)
    out.sort(
        key=lambda r: (
            r.get("status", "current") != "current",
            str(r.get("subject", "")).lower(),
            str(r.get("attribute", "")),
        )
    )
    return out
