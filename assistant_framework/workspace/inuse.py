"""Whether a workspace is in use, and keeping it unused while ``restore`` replaces it.

A running bot (any frontend) and ``assistant web`` hold a shared ``flock`` on ``state/in-use.lock``
for as long as they run (``hold_in_use``); the Telegram and Signal frontends also hold their own
``state/bot.lock`` / ``state/signal.lock`` (one bot per workspace). ``exclusive`` takes every
``state/*.lock`` exclusively without waiting: one held by anyone means the workspace is in use, and
holding them all through a restore keeps a bot from starting on the workspace meanwhile.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from assistant_framework.hints import CLI
from assistant_framework.workspace.paths import WorkspacePathError
from assistant_framework.workspace.private import FILE_MODE, make_private_dirs

IN_USE_LOCK = "state/in-use.lock"


class WorkspaceBusyError(WorkspacePathError):
    """The workspace is in use (a bot runs on it), or being restored."""


class InUse:
    """A shared hold on a workspace; released by ``release()`` or when the process ends."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock


def hold_in_use(root: str | os.PathLike[str]) -> InUse:
    """Mark the workspace at ``root`` in use until the hold is released (or the process ends).

    Raises WorkspaceBusyError while a restore replaces it.
    """
    path = Path(root) / IN_USE_LOCK
    make_private_dirs(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise WorkspaceBusyError(
            f"{root}: the workspace is being restored ({IN_USE_LOCK} is held); start again when the restore is done"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    return InUse(fd)


@contextmanager
def exclusive(root: str | os.PathLike[str]) -> Iterator[None]:
    """Hold every lock of the workspace at ``root`` exclusively for the ``with`` block.

    Raises WorkspaceBusyError naming the locks held by someone else (a running bot, ``assistant web``);
    nothing is waited for. A folder without ``state/`` has no locks and is not in use.
    """
    base = Path(root)
    state = base / "state"
    if not state.is_dir():
        yield
        return
    names = sorted({IN_USE_LOCK, *(p.relative_to(base).as_posix() for p in state.glob("*.lock"))})
    held: list[int] = []
    busy: list[str] = []
    try:
        for name in names:
            try:
                fd = os.open(base / name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
            except OSError:
                busy.append(name)  # a link or no access: never proceed on a guess
                continue
            held.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                busy.append(name)
        if busy:
            raise WorkspaceBusyError(
                f"{root} is in use ({', '.join(busy)} held: a running bot or `{CLI} web`); stop it first "
                "(e.g. `systemctl stop assistant` or `docker compose stop bot`), then run this again"
            )
        yield
    finally:
        for fd in held:
            os.close(fd)


__all__ = ["IN_USE_LOCK", "InUse", "WorkspaceBusyError", "exclusive", "hold_in_use"]
