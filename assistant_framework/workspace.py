"""The Workspace: all persistent state as plain files under one root.

Every whole-file write is atomic (temporary file in the same folder, fsync,
``os.replace``) so a crash leaves the old or the new content, never a torn
file. Appends take a file lock so lines from several threads or processes
never interleave. Every path is resolved inside the root: absolute paths,
``..`` escapes, symlinks that lead outside and NUL bytes are refused.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from filelock import FileLock

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: filelock's portable lock is used
    fcntl = None  # type: ignore[assignment]

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

_LOCK_SUFFIX = ".lock"
_LOCK_DIR = "state/locks"


class WorkspacePathError(ValueError):
    """A path that would leave the workspace, or is otherwise unusable."""


class NotAWorkspaceError(WorkspacePathError):
    """A folder given as a workspace that is not one (a typo must not create a new workspace)."""


#: The folder every workspace has (ensure_layout creates it); its absence means "not a workspace".
WORKSPACE_MARKER = "state"


def existing_workspace(root: str | os.PathLike[str]) -> "Workspace":
    """Open a workspace that already exists; raise NotAWorkspaceError for any other folder.

    Only the bot and ``assistant setup`` create workspaces; every other command uses this.
    """
    path = Path(root).expanduser()
    if not (path / WORKSPACE_MARKER).is_dir():
        raise NotAWorkspaceError(
            f"{root}: not a workspace (no {WORKSPACE_MARKER}/ folder in it). Check --workspace; "
            "`make run` or `assistant setup` creates a new one.")
    return Workspace(path)


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
        """Create the root and the documented folders when missing."""
        self.root.mkdir(parents=True, exist_ok=True)
        for folder in folders:
            (self.root / folder).mkdir(parents=True, exist_ok=True)

    # -- paths ---------------------------------------------------------------

    def path(self, rel: str | os.PathLike[str]) -> Path:
        """Resolve a workspace-relative path, refusing anything that escapes the root."""
        text = os.fspath(rel)
        if not isinstance(text, str):
            raise WorkspacePathError(f"workspace path must be text, got {text!r}")
        if "\x00" in text:
            raise WorkspacePathError(f"workspace path {text!r} contains a NUL byte")
        text = text.replace("\\", "/").strip()
        if not text:
            raise WorkspacePathError("workspace path is empty")
        if text.startswith("/") or (len(text) > 1 and text[1] == ":") or text.startswith("~"):
            raise WorkspacePathError(f"workspace path {text!r} is absolute; use a path relative to the workspace")
        parts = [p for p in text.split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            raise WorkspacePathError(f"workspace path {text!r} uses '..' to leave its folder")
        if not self._has_link(parts):
            # No symlink below the (already resolved) root: the joined path is the resolved one.
            return Path(self._root_text + "/" + "/".join(parts)) if parts else self.root
        # resolve() follows symlinks, so a link pointing outside shows up here.
        resolved = self.root.joinpath(*parts).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise WorkspacePathError(f"workspace path {text!r} leads outside the workspace (through a symlink)")
        return resolved

    def _has_link(self, parts: list[str]) -> bool:
        """True when a component below the root is a symlink (one lstat per existing component;
        cheaper than a full resolve(), which walks every component from '/')."""
        current = self._root_text
        for part in parts:
            current = current + "/" + part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                return False  # nothing below a missing component exists yet
            except OSError:
                return True  # e.g. a file used as a folder: let resolve() decide
            if stat.S_ISLNK(mode):
                return True
        return False

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
            raise ValueError(f"workspace file {rel!r} is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None

    def read_jsonl(self, rel: str) -> list[dict]:
        """All JSON objects of a JSONL file, skipping blank, torn or non-UTF-8 lines."""
        target = self.path(rel)
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            return []
        rows: list[dict] = []
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
            try:
                resolved = item.resolve()
            except OSError:
                continue
            if resolved != self.root and self.root not in resolved.parents:
                continue
            found.append(item.relative_to(self.root).as_posix())
        return sorted(found)

    # -- writing -------------------------------------------------------------

    def write_text(self, rel: str, text: str, *, durable: bool = True) -> Path:
        """Replace the file's content atomically; parent folders are created.

        ``durable=False`` skips the fsyncs: still atomic for readers and against a process
        crash, but a power loss may leave the old content or an empty file. Only for caches
        that can be rebuilt from another file.
        """
        return atomic_write_bytes(self.path(rel), text.encode("utf-8"), durable=durable)

    def write_json(self, rel: str, obj: Any, *, durable: bool = True) -> Path:
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
                fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            except FileNotFoundError:  # first line of a new folder
                target.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                size = os.fstat(fd).st_size
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

    def append_jsonl(self, rel: str, obj: Any) -> None:
        """Append one compact JSON object as a line."""
        self.append_line(rel, json.dumps(obj, ensure_ascii=False, separators=(",", ":")))

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

    def lock(self, rel: str, timeout: float = 30.0) -> "_CombinedLock":
        """A lock for one workspace file, held across threads and processes."""
        return self._lock_resolved(self.path(rel), timeout)

    def _lock_resolved(self, target: Path, timeout: float = 30.0) -> "_CombinedLock":
        text = str(target)
        key = text[len(self._root_text) + 1 :] if text.startswith(self._root_text + "/") else target.relative_to(self.root).as_posix()
        entry = self._locks.get(key)  # dict reads are atomic; creation below is guarded
        if entry is not None:
            return entry
        with self._thread_locks_guard:
            entry = self._locks.get(key)
            if entry is None:
                lock_path = self.root / _LOCK_DIR / (key.replace("/", "__") + _LOCK_SUFFIX)
                lock_path.parent.mkdir(parents=True, exist_ok=True)
                # The thread lock serialises this process, so the file lock need not be thread-local.
                if fcntl is not None:
                    file_lock: Any = _FlockLock(str(lock_path), timeout)
                else:  # pragma: no cover
                    file_lock = FileLock(str(lock_path), timeout=timeout, poll_interval=0.002, thread_local=False)
                entry = self._locks[key] = _CombinedLock(threading.Lock(), file_lock)
        return entry


def atomic_write_bytes(target: Path, data: bytes, *, durable: bool = True) -> Path:
    """Replace ``target`` with ``data`` atomically: temp file in the same folder, fsync, rename
    (``durable=False``: no fsync of the file and its folder; see ``Workspace.write_text``)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    except FileNotFoundError:  # a new folder
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    try:
        try:
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        try:
            # Keep the owner's permissions (e.g. a file the user made private).
            os.chmod(tmp, os.stat(target).st_mode & 0o777)
        except FileNotFoundError:
            pass
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        _fsync_dir(target.parent)
    return target


class _FlockLock:
    """An exclusive ``flock`` on a lock file, held by one thread at a time (POSIX).

    The same mechanism and files as filelock's UnixFileLock (so processes using either exclude
    each other), without its per-call bookkeeping: an append's lock costs ~7 µs instead of
    ~150 µs. A short poll of a non-blocking flock keeps contended appends fast.
    """

    def __init__(self, path: str, timeout: float, poll: float = 0.002) -> None:
        self.path = path
        self.timeout = timeout
        self.poll = poll
        self._fd: int | None = None

    def acquire(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise TimeoutError(f"lock file {self.path!r} still held by another process after {self.timeout:.0f} s") from None
                        time.sleep(self.poll)
                if os.fstat(fd).st_nlink:
                    self._fd = fd
                    return
                # The lock file was deleted while we waited: lock the new one instead.
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


class _CombinedLock:
    """A thread lock plus a file lock, because FileLock alone is re-entrant per object."""

    def __init__(self, thread_lock: threading.Lock, file_lock: Any) -> None:
        self._thread_lock = thread_lock
        self._file_lock = file_lock

    def __enter__(self) -> "_CombinedLock":
        self._thread_lock.acquire()
        try:
            self._file_lock.acquire()
        except BaseException:
            self._thread_lock.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._file_lock.release()
        finally:
            self._thread_lock.release()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
