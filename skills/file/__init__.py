"""Built-in skill: read, write, append, list and delete files inside the workspace."""

from __future__ import annotations

from assistant_framework.skills.support import need
from assistant_framework.workspace import Workspace

DESCRIPTION = "Read, write, append, list or delete workspace files (path, or paths for several)."
CAPABILITIES = ["read", "write", "delete"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["read", "write", "append", "list", "delete"]},
        "path": {"type": "string"},
        "paths": {"type": "array", "items": {"type": "string"}},
        "content": {"type": "string"},
    },
    "required": ["action"],
    "additionalProperties": False,
}
LIST_LIMIT = 200
#: Runtime state and caches the framework owns; the model may read but never change them.
READ_ONLY_FOLDERS = ("state", "memory")


def run(workspace: Workspace, args: dict):
    action = args["action"]
    if action == "list":
        return _list(workspace, args.get("path") or "")
    paths = _paths(args, action)
    if action in ("write", "append"):
        if len(paths) != 1:
            raise ValueError(f"action {action!r} takes one path, got {len(paths)}")
        if "content" not in args:
            raise ValueError(f"action {action!r} needs content")
        return _write(workspace, paths[0], args["content"], append=action == "append")
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


def _paths(args: dict, action: str) -> list[str]:
    paths = ([args["path"]] if args.get("path") else []) + list(args.get("paths") or [])
    if not paths:
        need(args, action, "path")
    return paths


def _read(workspace: Workspace, rel: str) -> str:
    target = workspace.path(rel)
    if target.is_dir():
        raise IsADirectoryError(f"workspace path {rel!r} is a folder; use action list")
    return workspace.read_text(rel)


def _check_writable(workspace: Workspace, rel: str):
    target = workspace.path(rel)
    top = workspace.relative(target).split("/", 1)[0]
    if top in READ_ONLY_FOLDERS:
        raise PermissionError(f"workspace path {rel!r} is in {top}/, which the framework manages; it is read-only here")
    return target


def _write(workspace: Workspace, rel: str, content: str, append: bool) -> str:
    target = _check_writable(workspace, rel)
    if append:
        existing = workspace.read_text(rel, default="")
        glue = "" if not existing or existing.endswith("\n") else "\n"
        workspace.write_text(rel, existing + glue + content + ("" if content.endswith("\n") else "\n"))
        return f"appended {len(content)} characters to {workspace.relative(target)}"
    workspace.write_text(rel, content)
    return f"wrote {len(content)} characters to {workspace.relative(target)}"


def _delete(workspace: Workspace, rel: str) -> str:
    target = _check_writable(workspace, rel)
    if target.is_dir() and any(target.iterdir()):
        raise IsADirectoryError(f"workspace folder {rel!r} is not empty; delete its files first")
    if not workspace.delete(rel):
        raise FileNotFoundError(f"workspace file {rel!r} does not exist")
    return f"deleted {rel}"


def _list(workspace: Workspace, folder: str) -> dict:
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
    result: dict = {"folder": folder or ".", "files": shown}
    if len(files) > len(shown):
        result["more"] = len(files) - len(shown)
    return result
