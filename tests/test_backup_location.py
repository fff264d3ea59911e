"""Backups land where backups belong (issue 33.7): with default paths the archive goes to ``backups/`` beside
the workspace (git-ignored in the checkout), not into the current folder, and ``restore --force`` keeps the
old workspace there too, so ``git status`` stays clean after both."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from tests import preload

REPO = Path(__file__).resolve().parents[1]


def _git(clone: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=clone,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _assistant(clone: Path, *args: str) -> subprocess.CompletedProcess:
    return preload.run(
        [sys.executable, "-m", "messaging_llm_bot.cli", *args],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A checkout as a fresh clone has it (its .gitignore, the tracked workspace/ placeholder), after a run."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path / "clone"
    (clone / "workspace").mkdir(parents=True)
    shutil.copy(REPO / ".gitignore", clone / ".gitignore")
    shutil.copy(REPO / "workspace" / "README.md", clone / "workspace" / "README.md")  # the tracked placeholder
    _git(clone, "init", "-q")
    _git(clone, "add", "-A")
    _git(clone, "commit", "-qm", "fresh clone")
    ws = Workspace(clone / "workspace")  # what `make run` lays out
    ws.write_text("notes/plan.md", "the plan")
    assert _git(clone, "status", "--porcelain") == ""
    return clone


def test_backup_and_restore_with_default_paths_keep_git_status_clean(clone: Path) -> None:
    made = _assistant(clone, "backup")
    assert made.returncode == 0, made.stderr
    archives = list((clone / "backups").glob("assistant-backup-*.tar.gz"))
    assert len(archives) == 1 and str(archives[0].relative_to(clone)) in made.stdout
    assert not list(clone.glob("*.tar.gz"))  # not in the checkout's root
    assert _git(clone, "status", "--porcelain") == ""

    (clone / "workspace" / "notes" / "plan.md").write_text("changed after the backup")
    back = _assistant(clone, "restore", str(archives[0]), "--force")
    assert back.returncode == 0, back.stderr
    kept = list((clone / "backups").glob("workspace.before-restore-*"))
    assert len(kept) == 1 and (kept[0] / "notes" / "plan.md").read_text() == "changed after the backup"
    assert (clone / "workspace" / "notes" / "plan.md").read_text() == "the plan"
    assert f"the previous workspace is in {kept[0].relative_to(clone)}" in back.stdout
    assert ".venv/bin/assistant memory reindex" in back.stdout  # a hint the user can run
    assert [p.name for p in clone.iterdir() if p.name.startswith("workspace")] == ["workspace"]
    assert _git(clone, "status", "--porcelain") == ""


def test_an_out_folder_given_is_still_used_and_said(clone: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "offsite"
    elsewhere.mkdir()
    made = _assistant(clone, "backup", "--out", str(elsewhere))
    assert made.returncode == 0, made.stderr
    assert len(list(elsewhere.glob("assistant-backup-*.tar.gz"))) == 1
    assert not (clone / "backups").exists()
