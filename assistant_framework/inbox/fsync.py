"""fsyncs made together: a batch of inbox items costs one journal commit, not two per item."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def fsync_all(paths: list[Path]) -> None:
    """fsync files and folders concurrently (one journal commit for the lot on ext4/xfs)."""
    if not paths:
        return
    if len(paths) == 1:
        fsync_path(paths[0])
        return
    with ThreadPoolExecutor(min(16, len(paths)), thread_name_prefix="inbox-fsync") as pool:
        for _ in pool.map(fsync_path, paths):
            pass


def fsync_path(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
