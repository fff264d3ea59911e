"""``restore`` refuses a member whose path leaves the workspace, whatever the spelling (issue 34.12: the
neighbours of test_backup.py's in-process test): an absolute path, ``..`` at the top or deep in the path,
after good members, through the ``assistant`` command (its ``main`` in-process: tests/cli_inprocess.py), over
an existing workspace with ``--force``. Exit 2 naming the member, and nothing is written anywhere: the
workspace is as it was, no file lands outside it, no staging folder is left."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from assistant_framework.hints import CLI
from assistant_framework.workspace import Workspace
from tests.cli_inprocess import run_cli


def _archive(path: Path, hostile: str) -> Path:
    """A backup-shaped archive: the state folder and a good note first, then the hostile member."""
    with tarfile.open(path, "w:gz") as tar:
        state = tarfile.TarInfo("workspace/state")
        state.type = tarfile.DIRTYPE
        tar.addfile(state)
        for name, data in (("workspace/notes/good.md", b"good"), (hostile, b"escaped")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _everything(folder: Path) -> dict[str, bytes | None]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


@pytest.mark.parametrize(
    "hostile",
    [
        "{outside}/escape.txt",  # absolute
        "workspace/../escape.txt",
        "workspace/notes/../../escape.txt",
        "workspace/notes/a/b/../../../../escape.txt",
    ],
    ids=["absolute", "dotdot-top", "dotdot-deep", "dotdot-deeper"],
)
def test_restore_refuses_a_path_out_of_the_workspace_through_the_cli(tmp_path: Path, hostile: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = Workspace(tmp_path / "ws")
    ws.write_text("notes/mine.md", "the owner's note\n")
    hostile = hostile.format(outside=outside)
    archive = _archive(tmp_path / "hostile.tar.gz", hostile)
    before = _everything(tmp_path)
    result = run_cli("restore", str(archive), "--workspace", str(ws.root), "--force")
    assert result.returncode == 2, result.stderr
    assert (
        # the hint names the command as this install's hints do (their form: tests/test_hints.py)
        hostile in result.stderr and f"not a file of a backup made by `{CLI} backup`" in result.stderr
    ), result.stderr
    assert "Traceback" not in result.stderr
    assert _everything(tmp_path) == before  # the workspace as it was, nothing outside it, no staging folder
    assert not (outside / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()
