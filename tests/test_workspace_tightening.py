"""A workspace made before files were private is tightened once at start by every frontend, not only the
Telegram bot process (issue 34.12: the neighbour of test_private_files.py's test): the Signal bot
makes 0644/0755 files and folders 0600/0700 with one warning naming the count, says nothing at its
next start, and leaves alone what a link leads to outside the workspace (a linked folder is not
entered). The real SignalService against the fake signal-cli daemon, files made under umask 022."""

from __future__ import annotations

import logging
import os
import stat

from tests.signal_harness import OWNER
from tests.test_private_files import loose, umask


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
