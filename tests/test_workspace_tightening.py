"""A workspace made before files were private is tightened once at start by every frontend, not only the
Telegram bot process (issue 34.12: the neighbour of test_private_files.py's test): the Signal bot
makes 0644/0755 files and folders 0600/0700 with one warning naming the count, says nothing at its
next start, and leaves alone what a link leads to outside the workspace (a linked folder is not
entered). The real SignalService against the fake signal-cli daemon, files made under umask 022. The web
page started alone (``assistant web``, no bot) does the same at its start."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from tests.crash_bot import REPO
from tests.signal_harness import OWNER
from tests.test_private_files import loose, umask

ASSISTANT = str(REPO / ".venv" / "bin" / "assistant")


def test_the_signal_bot_tightens_a_workspace_made_before_once(start, daemon, chat_server, workspace, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    outside = tmp_path / "shared"
    outside.mkdir()
    (outside / "theirs.txt").write_text("not the workspace's\n")
    os.chmod(outside / "theirs.txt", 0o644)
    os.chmod(outside, 0o755)
    with umask(0o022):
        workspace.write_text("notes/deep/old.md", "# old")
        for path in [workspace.root, *workspace.root.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
    os.symlink(outside, workspace.root / "notes" / "shared")  # a folder link out: not entered, not changed
    before = len(loose(workspace.root))
    assert before > 10
    bot = start()
    said = [r.getMessage() for r in caplog.records if "private (0600/0700)" in r.getMessage()]
    assert len(said) == 1 and f"made {before} files and folders private" in said[0], said
    assert loose(workspace.root) == []
    assert stat.S_IMODE(os.stat(outside / "theirs.txt").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(outside).st_mode) == 0o755
    chat_server.enqueue('{"reply": "still here"}')
    daemon.message(OWNER, "hi")
    assert daemon.wait_sent(1)[0]["message"] == "still here"
    bot.stop()
    caplog.clear()
    start()
    assert not [r for r in caplog.records if "private (0600/0700)" in r.getMessage()]
    assert loose(workspace.root) == []


def loose_workspace(root: Path, outside: Path) -> int:
    """A workspace as an older version left it (0644 files, 0755 folders), with a folder link out to
    ``outside`` (0644/0755, not the workspace's); returns how many entries are loose."""
    outside.mkdir()
    (outside / "theirs.txt").write_text("not the workspace's\n")
    os.chmod(outside / "theirs.txt", 0o644)
    os.chmod(outside, 0o755)
    with umask(0o022):
        old = Workspace(root)
        old.write_text("notes/deep/old.md", "# old")
        old.write_text("state/web/token", "a-token-from-before\n")
        for path in [root, *root.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
    os.symlink(outside, root / "notes" / "shared")
    return len(loose(root))


@pytest.mark.timeout(120)
def test_assistant_web_started_alone_tightens_a_workspace_made_before_once(tmp_path, bot_config):
    """``assistant web`` without the bot (the real CLI): the same tightening, one warning, silent the
    next time; the web token a loose workspace held is private before the page serves it."""
    ws = tmp_path / "ws"
    outside = tmp_path / "shared"
    before = loose_workspace(ws, outside)
    assert before > 5
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**bot_config, "web": {"port": 0}}))
    said = []
    for _ in range(2):
        page = subprocess.Popen(
            [ASSISTANT, "web", "--config", str(config), "--workspace", str(ws), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=REPO,
        )
        try:
            out = ""
            while "web page:" not in out:  # the banner: the page serves
                line = page.stdout.readline()
                assert line, f"assistant web ended before it served: {out}"
                out += line
            assert loose(ws) == []
        finally:
            page.kill()
            page.communicate()
        said.append([line for line in out.splitlines() if "private (0600/0700)" in line])
    assert len(said[0]) == 1 and f"made {before} files and folders private" in said[0][0] and str(ws) in said[0][0]
    assert said[1] == []
    assert stat.S_IMODE(os.stat(outside / "theirs.txt").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(outside).st_mode) == 0o755


def test_the_web_pages_own_start_tightens_a_workspace_made_before(tmp_path, bot_config, caplog):
    """The neighbour in this process: ``standalone_parts`` (what ``assistant web`` builds the page from)
    tightens, whatever starts it."""
    from assistant_framework.web import standalone_parts

    caplog.set_level(logging.WARNING)
    ws = tmp_path / "ws"
    before = loose_workspace(ws, tmp_path / "shared")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(bot_config))
    with umask(0o022):
        parts = standalone_parts(config, ws)
    parts.close()
    assert loose(ws) == []
    said = [r.getMessage() for r in caplog.records if "private (0600/0700)" in r.getMessage()]
    assert len(said) == 1 and f"made {before} files and folders private" in said[0], said
