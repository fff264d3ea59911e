"""The durable inbox made unable to store, and repaired (tests/test_inbox_held.py, the channel kit's HELD case).

Storage is broken by putting a file where the inbox's folder ``state/inbox/pending`` is: every write below it fails
with ENOTDIR, also for root, whom ``chmod`` does not stop (the disk-full and read-only file systems are
tests/test_reliability_disk.py: they need ``mount``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from assistant_framework.inbox import PENDING_DIR
from assistant_framework.workspace import Workspace


def break_inbox(workspace: Workspace) -> Path:
    """Every inbox write fails from now on (ENOTDIR); returns the file to remove to repair it."""
    pending = workspace.path(PENDING_DIR)
    shutil.rmtree(pending, ignore_errors=True)
    pending.write_text("not a folder\n")
    return pending


def repair_inbox(pending: Path) -> None:
    pending.unlink()
    pending.mkdir()
