"""File locks for workspace files, held across threads and processes.

Each locked file has a lock file under ``state/locks/``; a lock is a thread lock plus an
exclusive ``flock`` on that file (filelock's portable lock where ``fcntl`` is missing), so
appends from several threads or processes never interleave.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from filelock import FileLock

from assistant_framework.workspace.private import make_private_dirs

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: filelock's portable lock is used
    fcntl = None  # type: ignore[assignment]

_LOCK_SUFFIX = ".lock"
_LOCK_DIR = "state/locks"


def new_lock(root: Path, key: str, timeout: float) -> _CombinedLock:
    """A new lock for the workspace file ``key`` (relative posix path) under ``root``."""
    lock_path = root / _LOCK_DIR / (key.replace("/", "__") + _LOCK_SUFFIX)
    make_private_dirs(lock_path.parent)
    # The thread lock serialises this process, so the file lock need not be thread-local.
    if fcntl is not None:
        file_lock: Any = _FlockLock(str(lock_path), timeout)
    else:  # pragma: no cover
        file_lock = FileLock(str(lock_path), timeout=timeout, poll_interval=0.002, thread_local=False, mode=0o600)
    return _CombinedLock(threading.Lock(), file_lock)


def flock_until(fd: int, deadline: float, poll: float) -> bool:
    """An exclusive ``flock`` on ``fd`` (POSIX), asked again every ``poll`` seconds until ``deadline`` (a
    ``time.monotonic`` time); False when another holder still had it then."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)


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
                if not flock_until(fd, deadline, self.poll):
                    raise TimeoutError(
                        f"lock file {self.path!r} still held by another process after {self.timeout:.0f} s"
                    )
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

    def __enter__(self) -> _CombinedLock:
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
