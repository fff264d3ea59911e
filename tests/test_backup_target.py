"""``backup`` never writes its archive inside the workspace it backs up (found by the mutation audit: no test
tried). The archive holds all memory; inside the workspace it would be read by the bot's own skills, go
into the next backup and into every later one. Through the real ``assistant`` command: into a folder of
the workspace, as a file named there, and through a link outside that leads back in, each is exit 2 with
a message naming the place, and nothing is written; a folder beside the workspace is fine."""

from __future__ import annotations

import os

import pytest

from assistant_framework.workspace import Workspace
from tests.cli_inprocess import CliRun, run_cli
from tests.crash_bot import REPO

ASSISTANT = str(REPO / ".venv" / "bin" / "assistant")


def _backup(ws: Workspace, out) -> CliRun:
    """`assistant backup` in this process (tests/cli_inprocess.py): its exit status, messages and files."""
    return run_cli("backup", "--workspace", str(ws.root), "--out", str(out))


@pytest.mark.parametrize("where", ["folder", "file", "link-back-in"])
def test_backup_refuses_to_write_its_archive_inside_the_workspace(tmp_path, where):
    ws = Workspace(tmp_path / "ws")
    ws.write_text("notes/mine.md", "# mine\n")
    if where == "link-back-in":
        os.symlink(ws.root / "notes", tmp_path / "shortcut")  # outside, leading in
        out = tmp_path / "shortcut"
    else:
        out = ws.root / "notes" if where == "folder" else ws.root / "notes" / "all.tar.gz"
    before = sorted(p.relative_to(ws.root).as_posix() for p in ws.root.rglob("*"))
    result = _backup(ws, out)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "may not be written inside the workspace" in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.relative_to(ws.root).as_posix() for p in ws.root.rglob("*")) == before  # not even a partial


def test_backup_beside_the_workspace_is_written(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.write_text("notes/mine.md", "# mine\n")
    (tmp_path / "backups").mkdir()
    result = _backup(ws, tmp_path / "backups")
    assert result.returncode == 0, result.stderr
    assert len(list((tmp_path / "backups").glob("assistant-backup-*.tar.gz"))) == 1
