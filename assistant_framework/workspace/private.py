"""Private files: a workspace (memory, conversations, state, the web token) is its owner's alone.

Whatever the umask, the workspace's folders are created 0700 and its files 0600: atomic writes use
``mkstemp`` (0600), appends and lock files ``os.open(..., 0o600)``, folders ``make_private_dirs``,
the SQLite index is created by ``private_file`` first (SQLite gives its ``-wal``/``-shm`` files the
database file's mode). The bot and the CLI also run under a ``0077`` umask (``private_umask``), so
files a library or a plugin creates with plain ``open()`` are private too. ``tighten`` takes group
and other permissions off a workspace made before; ``make_workspace_private`` does it with one log line,
at the start of whatever serves a workspace (the bot, ``assistant web`` alone).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

FILE_MODE = 0o600
DIR_MODE = 0o700
#: Permission bits of group and others: never set on anything in a workspace.
NOT_PRIVATE = 0o077


def make_private_dirs(folder: str | os.PathLike[str]) -> None:
    """``mkdir -p`` where every folder created is 0700 (``Path.mkdir(parents=True)`` gives the parents
    it creates the umask's mode, 0755 under the usual 022)."""
    missing: list[Path] = []
    current = Path(folder)
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, DIR_MODE)  # the umask can only take bits away: private whatever it is
        except FileExistsError:  # made meanwhile by another thread or process
            continue


def private_file(path: str | os.PathLike[str]) -> None:
    """Create ``path`` empty with mode 0600 when it is missing; take group and other bits off it when not."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        mode = os.fstat(fd).st_mode
        if mode & NOT_PRIVATE:
            os.fchmod(fd, stat.S_IMODE(mode) & ~NOT_PRIVATE)
    finally:
        os.close(fd)


def tighten(root: str | os.PathLike[str]) -> list[str]:
    """Take group and other permissions off every file and folder under ``root`` (and ``root``).

    Links are neither followed nor changed; each entry is opened with ``O_NOFOLLOW`` and changed through
    its descriptor, so a file swapped for a link meanwhile changes nothing outside. Returns the paths
    changed, relative to ``root`` ("." for the root itself).
    """
    base = Path(root)
    changed: list[str] = []
    for path in _entries(base):
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if not mode & NOT_PRIVATE or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:  # gone, a link by now, or unreadable (then not readable by others either)
            continue
        try:
            now = os.fstat(fd).st_mode
            if (stat.S_ISREG(now) or stat.S_ISDIR(now)) and now & NOT_PRIVATE:
                os.fchmod(fd, stat.S_IMODE(now) & ~NOT_PRIVATE)
                changed.append(path.relative_to(base).as_posix() if path != base else ".")
        except OSError:
            pass
        finally:
            os.close(fd)
    return changed


#: The top-level folders (and files) of the owner's own memory: what people edit by hand in an editor (memory
#: recall reads them fresh: memory/sources.py). An editor that saves by writing a new file beside and renaming it
#: over the old one leaves the file with the umask's mode (0644): tightened at the next start without a warning.
HAND_EDITED: tuple[str, ...] = (
    "profile.md",
    "notes",
    "tasks",
    "facts",
    "learnings",
    "contacts",
    "birthdays",
    "routines",
    "reminders",
)
#: Where else the owner writes by hand: the Markdown about them put in every prompt.
OWNER_WRITTEN: tuple[str, ...] = (*HAND_EDITED, "context")


def _owner_written(changed: list[str]) -> bool:
    """Whether every path tightened is a file (not a folder) the owner writes by hand."""
    return all(rel.split("/", 1)[0] in OWNER_WRITTEN and rel not in OWNER_WRITTEN for rel in changed)


def make_workspace_private(root: str | os.PathLike[str], *, new: bool = False) -> None:
    """A workspace made before files were private (or copied in by hand) is tightened at start: group and
    other permissions come off every file and folder. Said once; the next start finds nothing to change.
    A ``new`` one (the bot creates it now) is tightened without a warning: what was there is no data of the
    assistant's (a fresh clone's ``workspace/`` with its tracked README is 0755/0644), and a new user's first
    start began with a warning that others could read their files."""
    changed = tighten(root)
    if changed and new:
        log.debug("new workspace %s: made %d files and folders private (0600/0700)", root, len(changed))
    elif changed and len(changed) <= 20 and _owner_written(changed):
        # The owner's own edit (a note, facts.json saved by an editor): no WARNING on the chat's screen each time.
        log.info("workspace %s: made private (0600) what you wrote by hand: %s", root, ", ".join(changed))
    elif changed:
        log.warning(
            "workspace %s: made %d files and folders private (0600/0700): other users of this machine could read them",
            root,
            len(changed),
        )


def _entries(base: Path) -> Iterator[Path]:
    yield base
    for folder, folders, files in os.walk(base):  # followlinks=False: a linked folder is not entered
        here = Path(folder)
        for name in folders + files:
            yield here / name


@contextmanager
def private_umask() -> Iterator[None]:
    """Run with group and other bits masked (``umask | 0077``); the previous umask is put back after."""
    previous = os.umask(NOT_PRIVATE)
    os.umask(previous | NOT_PRIVATE)
    try:
        yield
    finally:
        os.umask(previous)


def use_private_umask() -> None:
    """For the whole process (the bot): group and other bits masked from now on."""
    previous = os.umask(NOT_PRIVATE)
    os.umask(previous | NOT_PRIVATE)
