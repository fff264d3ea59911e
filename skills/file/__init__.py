"""Built-in skill: read, write, append, list and delete files inside the workspace.

In a turn with outside content, what ``write``/``append`` store is marked (``provenance``): a text
file (Markdown, plain text) gets the front matter ``untrusted: true`` (an append marks the whole
file, which now holds outside text), a JSON document or JSON Lines rows ``"untrusted": true``; other
files cannot carry the mark and are written as given. A ``.json`` file memory indexes is refused
instead when not every record the index would make of it could be marked (it does not parse, as
after an append; a string in a bare list; a scalar): indexed unmarked, it would be recalled as the
owner's. ``read`` of a file with the mark (front matter or a marked record) starts with
``OUTSIDE_LABEL``, so the turn that reads it is untrusted.
"""

from __future__ import annotations

import json
from pathlib import Path

from assistant_framework.json_types import JsonObject
from assistant_framework.memory.sources import source_for
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import MARKED, OUTSIDE_LABEL, context_untrusted, need
from assistant_framework.stores.provenance import (
    MARKABLE_JSON_SUFFIXES,
    MARKABLE_JSONL_SUFFIXES,
    UNTRUSTED_RECORD,
    is_marked_text,
    mark_file_content,
)
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Workspace files by path (notes/x.md): read, write, append, list a folder, delete. For a "
    "file or folder the user names."
)
CAPABILITIES = ["read", "write", "delete"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["read", "write", "append", "list", "delete"]},
        # Bounded: a path fits the question the owner is asked (agent/guard.py, QUESTION_ARGS_CHARS).
        "path": {"type": "string", "maxLength": 1000},
        "paths": {"type": "array", "items": {"type": "string", "maxLength": 1000}},
        "content": {"type": "string"},
        # read from this character on: the rest of a long file (a document's text) after the part already read
        "offset": {"type": "integer", "minimum": 0},
    },
    "required": ["action"],
    "additionalProperties": False,
}
LIST_LIMIT = 200
#: Runtime state and caches the framework owns; the model may read but never change them.
READ_ONLY_FOLDERS = ("state", "memory")


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    action = args["action"]
    if action == "list":
        return _list(workspace, args.get("path") or "")
    paths = _paths(args, action)
    if action in ("write", "append"):
        if len(paths) != 1:
            raise ValueError(f"action {action!r} takes one path, got {len(paths)}")
        if "content" not in args:
            raise ValueError(f"action {action!r} needs content")
        return _write(
            workspace, paths[0], args["content"], append=action == "append", untrusted=context_untrusted(context)
        )
    if action == "read" and args.get("offset"):
        if len(paths) != 1:
            raise ValueError(f"an offset reads one path, got {len(paths)}")
        return _read(workspace, paths[0], int(args["offset"]))
    handler = _read if action == "read" else _delete
    if len(paths) == 1:
        return handler(workspace, paths[0])
    # Several paths: one failure must not hide the other results.
    results = {}
    for rel in paths:
        try:
            results[rel] = handler(workspace, rel)
        except (OSError, ValueError) as exc:
            results[rel] = f"Error: {exc}"
    return results


def _paths(args: SkillArgs, action: str) -> list[str]:
    paths = ([args["path"]] if args.get("path") else []) + list(args.get("paths") or [])
    if not paths:
        need(args, action, "path")
    return paths


def _read(workspace: Workspace, rel: str, offset: int = 0) -> str:
    target = workspace.path(rel)
    if target.is_dir():
        raise IsADirectoryError(f"workspace path {rel!r} is a folder; use action list")
    text = workspace.read_text(rel)
    marked = is_marked_text(text) or UNTRUSTED_RECORD.search(text)  # of the whole file, whatever part is read
    if offset:
        total = len(text)
        text = f"[characters {min(offset, total):,} to {total:,} of {total:,}]\n{text[offset:]}"
    if marked:
        # The label first: a result cut at the skill result limit still carries it.
        return f"{OUTSIDE_LABEL} {rel} holds text marked untrusted (written from outside content):\n{text}"
    return text


def _check_writable(workspace: Workspace, rel: str) -> Path:
    target = workspace.path(rel)
    top = workspace.relative(target).split("/", 1)[0]
    if top in READ_ONLY_FOLDERS:
        raise PermissionError(f"workspace path {rel!r} is in {top}/, which the framework manages; it is read-only here")
    return target


#: Files of scheduled work the framework reads as one JSON list of rows (jobs/jobs.json, reminders/...).
_SCHEDULE_LISTS = ("jobs/", "reminders/")


def _check_schedule_list(rel: str, text: str, append: bool) -> None:
    """ValueError when a write would leave a file of jobs or reminders that is not a JSON list: the scheduler
    could then read none of its rows, and every job or reminder in it would stop."""
    if not (rel.startswith(_SCHEDULE_LISTS) and rel.lower().endswith(".json")):
        return
    try:
        data = json.loads(text) if text.strip() else []
    except ValueError as err:
        why = "an append leaves two JSON documents in one file" if append else f"it is not JSON ({err})"
        raise ValueError(
            f"nothing {'appended' if append else 'written'} to {rel}: {why}; this file must stay one JSON list of "
            "rows, or every row in it stops. Read it and write the whole list, or use the jobs or reminders skill"
        ) from None
    if not isinstance(data, list):
        raise ValueError(f"nothing written to {rel}: it must stay one JSON list of rows (got {type(data).__name__})")


def _write(workspace: Workspace, rel: str, content: str, append: bool, untrusted: bool = False) -> str:
    target = _check_writable(workspace, rel)
    if target.is_dir():
        folder = workspace.relative(target)
        raise IsADirectoryError(f"workspace path {rel!r} is a folder; give a file path in it, e.g. {folder}/<name>.md")
    size, marked, note = len(content), False, ""
    rows_only = rel.lower().endswith(MARKABLE_JSONL_SUFFIXES)  # JSON Lines: only the new rows are marked
    if untrusted and rows_only:
        content, marked = mark_file_content(rel, content)
    if append:
        existing = workspace.read_text(rel, default="")
        glue = "" if not existing or existing.endswith("\n") else "\n"
        text = existing + glue + content + ("" if content.endswith("\n") else "\n")
    else:
        text = content
    if untrusted and not rows_only:
        text, marked = mark_file_content(rel, text)  # front matter goes on top: the whole file is marked
        if not marked and rel.lower().endswith(MARKABLE_JSON_SUFFIXES) and source_for(workspace.relative(target)):
            # Memory would index it (or part of it) as the owner's: nothing is written.
            raise ValueError(
                f"nothing {'appended' if append else 'written'} to {workspace.relative(target)}: this turn holds "
                "outside "
                "content and memory indexes this file, so each of its records must carry the outside mark, which this "
                "JSON cannot ("
                + (
                    "an append leaves two JSON documents in one file; read the file and write the whole "
                    "document instead"
                    if append
                    else "it must parse, and be a list of objects or an object"
                )
                + ")"
            )
    _check_schedule_list(workspace.relative(target), text, append)
    if untrusted:
        note = (
            f" ({MARKED})"
            if marked
            else " (not marked as outside content: only text files and JSON records can carry the mark)"
        )
    workspace.write_text(rel, text)
    return f"{'appended' if append else 'wrote'} {size} characters to {workspace.relative(target)}{note}"


def _delete(workspace: Workspace, rel: str) -> str:
    target = _check_writable(workspace, rel)
    if target.is_dir() and any(target.iterdir()):
        raise IsADirectoryError(f"workspace folder {rel!r} is not empty; delete its files first")
    if not workspace.delete(rel):
        raise FileNotFoundError(f"workspace file {rel!r} does not exist")
    return f"deleted {rel}"


def _list(workspace: Workspace, folder: str) -> JsonObject:
    folder = folder.strip().strip("/")
    if folder:
        base = workspace.path(folder)  # refuses paths leaving the workspace
        if not base.is_dir():
            raise NotADirectoryError(f"workspace folder {folder!r} does not exist")
        pattern = f"{workspace.relative(base)}/**/*"
    else:
        pattern = "**/*"
    files = [rel for rel in workspace.list(pattern) if not rel.startswith("state/locks/")]
    shown = files[:LIST_LIMIT]
    result: JsonObject = {"folder": folder or ".", "files": shown}
    if len(files) > len(shown):
        result["more"] = len(files) - len(shown)
    return result
