"""One run of a collector at a time across processes: the bot's runner, ``collectors run NAME`` and
``collectors run-loop`` on one workspace.

The runner's busy slot keeps one process from overlapping itself; this is the same guarantee between
processes. A run holds an exclusive ``flock`` on ``state/locks/collector-<name>.run.lock`` from its start until
its worker thread ends (a run abandoned at its timeout keeps it while the thread lives); the kernel drops it
when the process dies, so a crash leaves nothing to clean up.
"""

from __future__ import annotations

import fcntl
import os
import threading

from assistant_framework.workspace import Workspace
from assistant_framework.workspace.private import FILE_MODE, make_private_dirs

#: Beside the workspace's other lock files (``backup`` leaves ``state/locks/`` out).
RUN_LOCK_DIR = "state/locks"


class RunLock:
    """The hold of one collector's run; ``release`` (once, from any thread) lets the next run start."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd
        self._guard = threading.Lock()  # the run and its abandoned worker may both release it

    def release(self) -> None:
        with self._guard:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock


def take_run_lock(workspace: Workspace, name: str) -> RunLock | None:
    """The run lock of collector ``name``, or None when another process runs it now (nothing is waited for)."""
    path = workspace.root / RUN_LOCK_DIR / f"collector-{name}.run.lock"
    make_private_dirs(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return RunLock(fd)


def runs_elsewhere(workspace: Workspace, name: str) -> bool:
    """Whether collector ``name``'s run lock is held now: by another process, when this one is not running it."""
    lock = take_run_lock(workspace, name)
    if lock is None:
        return True
    lock.release()
    return False
