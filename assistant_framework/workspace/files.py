"""The Workspace class: the file API over one root (read, write, append, list, delete, lock).

Its parts live beside it: path confinement (``paths``), atomic writes (``atomic``) and
file locks (``locks``). ``LAYOUT`` names the folders a workspace has; ``existing_workspace``
opens one without creating it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assistant_framework.hints import CLI
from assistant_framework.json_types import JsonObject
from assistant_framework.workspace.atomic import _write_all, atomic_write_bytes
from assistant_framework.workspace.locks import _LOCK_SUFFIX, _CombinedLock, new_lock
from assistant_framework.workspace.paths import WorkspacePathError, confined_path
from assistant_framework.workspace.private import NOT_PRIVATE, make_private_dirs, make_workspace_private
from assistant_framework.workspace.tail import LogCap, tail_bytes

#: Folders created on first use; docs/workspace.md describes each one.
LAYOUT: tuple[str, ...] = (
    "learnings",
    "notes",
    "tasks",
    "contacts",
    "birthdays",
    "routines",
    "facts",
    "reminders",
    "conversations",
    "collectors",
    "traces",
    "inbox",
    "context",
    "memory",
    "state",
)


class NotAWorkspaceError(WorkspacePathError):
    """A folder given as a workspace that is not one (a typo must not create a new workspace)."""


#: The folder every workspace has (ensure_layout creates it); its absence means "not a workspace".
WORKSPACE_MARKER = "state"


def is_workspace(root: str | os.PathLike[str]) -> bool:
    """Whether ``root`` holds a workspace already (its ``state/`` folder is there)."""
    return (Path(root).expanduser() / WORKSPACE_MARKER).is_dir()


def existing_workspace(root: str | os.PathLike[str]) -> Workspace:
    """Open a workspace that already exists; raise NotAWorkspaceError for any other folder.

    Only the bot and ``assistant setup`` create workspaces; every other command uses this.
    """
    path = Path(root).expanduser()
    if not is_workspace(path):
        raise NotAWorkspaceError(
            f"{root}: not a workspace (no {WORKSPACE_MARKER}/ folder in it). Check --workspace; "
            f"`make run` or `{CLI} setup` creates a new one."
        )
    return Workspace(path)


def created_workspace(root: str | os.PathLike[str]) -> Workspace:
    """Open the workspace at ``root``, creating it when there is none (only the bot and ``assistant setup`` do),
    its files and folders private: a new one silently (what was in the folder is no data of the assistant's,
    as a fresh clone's ``workspace/`` with its tracked README), one in use before with a warning."""
    new = not is_workspace(root)
    workspace = Workspace(root)
    make_workspace_private(workspace.root, new=new)
    return workspace


class Workspace:
    """File-backed state under one root directory."""

    def __init__(self, root: str | os.PathLike[str], create: bool = True) -> None:
        self.root = Path(root).expanduser().resolve()
        self._root_text = str(self.root)
        self._locks: dict[str, _CombinedLock] = {}
        self._thread_locks_guard = threading.Lock()
        if create:
            self.ensure_layout()

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def ensure_layout(self, folders: Iterable[str] = LAYOUT) -> None:
        """Create the root and the documented folders when missing (0700: the workspace is private)."""
        make_private_dirs(self.root)
        for folder in folders:
            make_private_dirs(self.root / folder)

    # -- paths ---------------------------------------------------------------

    def path(self, rel: str | os.PathLike[str]) -> Path:
        """Resolve a workspace-relative path, refusing anything that escapes the root."""
        return confined_path(self.root, self._root_text, rel)

    def relative(self, path: str | os.PathLike[str]) -> str:
        """The workspace-relative posix form of an absolute path inside the root."""
        return Path(path).resolve().relative_to(self.root).as_posix()

    def exists(self, rel: str) -> bool:
        return self.path(rel).exists()

    def mtime(self, rel: str) -> float | None:
        try:
            return self.path(rel).stat().st_mtime
        except FileNotFoundError:
            return None

    # -- reading -------------------------------------------------------------

    def read_text(self, rel: str, default: str | None = None) -> str:
        """The file's text; ``default`` when it is missing (FileNotFoundError if no default)."""
        target = self.path(rel)
        try:
            return target.read_text(encoding="utf-8")
        except FileNotFoundError:
            if default is None:
                raise FileNotFoundError(f"workspace file {rel!r} does not exist") from None
            return default

    def read_json(self, rel: str, default: Any = None) -> Any:
        """Parsed JSON; ``default`` when the file is missing."""
        target = self.path(rel)
        try:
            text = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            return default
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"workspace file {rel!r} is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None

    def read_state(self, rel: str, log: logging.Logger, fresh: str) -> JsonObject:
        """A state file's JSON object, ``{}`` when it is missing. A damaged one (unreadable, not UTF-8, not JSON, not
        an object) is moved aside (``move_aside``), said as a WARNING in ``log`` (``fresh``: what starts afresh, as the
        caller's line says it), and ``{}`` returned: state the code can rebuild never stops a start."""
        try:
            data = self.read_json(rel, default={})
            if not isinstance(data, dict):
                raise ValueError(f"workspace file {rel!r} is not a JSON object")
        except (ValueError, OSError) as err:
            log.warning("%s (%s; moved aside to %s)", fresh, err, self.move_aside(rel))
            return {}
        return data

    def read_jsonl(self, rel: str, last: int | None = None) -> list[JsonObject]:
        """All JSON objects of a JSONL file, skipping blank, torn or non-UTF-8 lines; ``last``: of its last lines
        only, read from its end (a log's newest records cost the same after a year as after a day)."""
        target = self.path(rel)
        try:
            data = target.read_bytes() if last is None else tail_bytes(target, last)
        except FileNotFoundError:
            return []
        rows: list[JsonObject] = []
        for raw in data.splitlines():
            raw = raw.strip()
            if not raw:
                continue
            try:  # a line with bytes that are not UTF-8 is damaged like a torn one: skipped
                value = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue
            if isinstance(value, dict):
                rows.append(value)
        return rows

    def list(self, pattern: str = "**/*", files_only: bool = True) -> list[str]:
        """Relative posix paths matching a glob, sorted; never follows links out of the root."""
        if "\x00" in pattern or pattern.startswith("/") or ".." in pattern.split("/"):
            raise WorkspacePathError(f"workspace glob {pattern!r} must stay inside the workspace")
        found: list[str] = []
        for item in self.root.glob(pattern):
            if files_only and not item.is_file():
                continue
            if item.name.endswith(_LOCK_SUFFIX) or ".tmp-" in item.name:
                continue
            rel = item.relative_to(self.root).as_posix()
            try:
                # The check every read and write makes: a name listed is a name ``path()`` accepts
                # (no link out on the way, no loop, no control character).
                self.path(rel)
            except WorkspacePathError:
                continue
            found.append(rel)
        return sorted(found)

    # -- writing -------------------------------------------------------------

    def write_text(self, rel: str, text: str, *, durable: bool = True) -> Path:
        """Replace the file's content atomically; parent folders are created.

        ``durable=False`` skips the fsyncs: still atomic for readers and against a process
        crash, but a power loss may leave the old content or an empty file. Only for caches
        that can be rebuilt from another file.
        """
        return atomic_write_bytes(self.path(rel), text.encode("utf-8"), durable=durable, private=True)

    def write_json(self, rel: str, obj: object, *, durable: bool = True) -> Path:
        """Write JSON atomically (indented, UTF-8 kept readable); ``durable`` as for ``write_text``."""
        text = json.dumps(obj, indent=2, ensure_ascii=False) + "\n"
        return self.write_text(rel, text, durable=durable)

    def append_line(self, rel: str, line: str) -> None:
        """Append one line; a lock keeps concurrent appends from interleaving."""
        if "\n" in line.rstrip("\n"):
            raise ValueError(f"append to {rel!r}: a line must not contain a newline")
        data = (line.rstrip("\n") + "\n").encode("utf-8")
        target = self.path(rel)
        with self._lock_resolved(target):
            try:
                fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            except FileNotFoundError:  # first line of a new folder
                make_private_dirs(target.parent)
                fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                st = os.fstat(fd)
                if st.st_mode & NOT_PRIVATE:  # a file made before, or by hand: private from now on
                    os.fchmod(fd, st.st_mode & 0o700)
                size = st.st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    # The last line has no newline (a crash mid-write, an editor): without one
                    # this line would be glued to it and both lost to every reader.
                    data = b"\n" + data
                try:
                    _write_all(fd, data)
                except OSError:
                    # Disk full mid-line: cut the partial line off, so the next append starts clean.
                    try:
                        os.ftruncate(fd, size)
                    except OSError:
                        pass
                    raise
            finally:
                os.close(fd)

    def append_jsonl(self, rel: str, obj: object, cap: LogCap | None = None) -> None:
        """Append one compact JSON object as a line; with ``cap``, a file grown past its size is cut to its newest
        lines (atomically, under the appends' lock: a line appended meanwhile is kept)."""
        self.append_line(rel, json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
        if cap is None:
            return
        target = self.path(rel)
        try:
            if target.stat().st_size <= cap.max_bytes:
                return
        except OSError:
            return
        with self._lock_resolved(target):
            if target.stat().st_size > cap.max_bytes:  # not cut by another writer meanwhile
                atomic_write_bytes(target, tail_bytes(target, cap.keep_lines, cap.max_bytes // 2), private=True)

    def delete(self, rel: str) -> bool:
        """Delete a file or an empty folder; True when something was deleted."""
        target = self.path(rel)
        if target == self.root:
            raise WorkspacePathError("refusing to delete the workspace root")
        try:
            if target.is_dir():
                target.rmdir()
            else:
                target.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise OSError(f"cannot delete workspace path {rel!r}: {exc.strerror}") from None
        return True

    def move_aside(self, rel: str) -> str:
        """Rename a damaged file to ``<name>.broken-<UTC time>`` (kept for a human) and return that path.

        For caches and state the code can rebuild: the caller then starts afresh instead of failing.
        """
        target = self.path(rel)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = target.with_name(f"{target.name}.broken-{stamp}")
        n = 1
        while aside.exists():  # two in the same second: never overwrite an earlier broken copy
            n += 1
            aside = target.with_name(f"{target.name}.broken-{stamp}-{n}")
        os.replace(target, aside)
        return self.relative(aside)

    def lock(self, rel: str, timeout: float = 30.0) -> _CombinedLock:
        """A lock for one workspace file, held across threads and processes."""
        return self._lock_resolved(self.path(rel), timeout)

    def _lock_resolved(self, target: Path, timeout: float = 30.0) -> _CombinedLock:
        text = str(target)
        key = (
            text[len(self._root_text) + 1 :]
            if text.startswith(self._root_text + "/")
            else target.relative_to(self.root).as_posix()
        )
        entry = self._locks.get(key)  # dict reads are atomic; creation below is guarded
        if entry is not None:
            return entry
        with self._thread_locks_guard:
            entry = self._locks.get(key)
            if entry is None:
                entry = self._locks[key] = new_lock(self.root, key, timeout)
        return entry
