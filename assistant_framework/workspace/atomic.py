"""Atomic whole-file writes: a crash leaves the old or the new content, never a torn file.

The data goes to a temporary file in the same folder, is fsynced, and replaces the target
with ``os.replace``; the folder is fsynced too, so the rename itself survives a power loss.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from assistant_framework.workspace.private import make_private_dirs


def atomic_write_bytes(target: Path, data: bytes, *, durable: bool = True, private: bool = False) -> Path:
    """Replace ``target`` with ``data`` atomically: temp file in the same folder, fsync, rename
    (``durable=False``: no fsync of the file and its folder; see ``Workspace.write_text``).

    A new file is 0600 and new folders 0700 (``mkstemp``, ``make_private_dirs``); a replaced file keeps
    its owner's permissions, and with ``private`` (every workspace write) loses group and other bits.
    """
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    except FileNotFoundError:  # a new folder
        make_private_dirs(target.parent)
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
            os.chmod(tmp, os.stat(target).st_mode & (0o700 if private else 0o777))
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
