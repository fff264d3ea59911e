"""Disk full and read-only workspace, end to end through Telegram.

The workspace lives on a small tmpfs mounted by the test (as root, chmod does not stop writes);
without permission to mount the test is skipped. The user gets one clear message, the log names
the problem, no file is torn, and once space is back the message that waited is answered.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
from pathlib import Path

import pytest

from assistant_framework.inbox import Inbox
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation import held
from tests.crash_bot import echo_reply
from tests.telegram_harness import OWNER, RunningBot, make_runtime, telegram_config, texts
from tests.tmpfs import mounted_tmpfs


@pytest.fixture
def small_disk(tmp_path):
    with mounted_tmpfs(tmp_path / "disk", "2m") as mount_point:
        yield mount_point


def fill(path: Path) -> None:
    """Write zeros to ``path`` until the file system is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        chunk = b"\0" * 65536
        while True:
            try:
                os.write(fd, chunk)
            except OSError:
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]
    finally:
        os.close(fd)


def assert_no_torn_files(root: Path) -> None:
    for path in root.rglob("*.json"):
        json.loads(path.read_text(encoding="utf-8"))  # raises on a half-written file
    for path in root.rglob("*.jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines()
        for line in lines:
            if line.strip():
                json.loads(line)


def test_disk_full_then_read_only_then_space_again(
    small_disk, fake, bot_config, tmp_path, chat_server, caplog, monkeypatch
):
    """A message that arrives while the disk is full (then read-only) waits unconfirmed: the user is told
    once which, the log names it once, and it is answered once storage works again (issue 26 follow-up)."""
    monkeypatch.setattr(held, "RETRY_FIRST_SECONDS", 0.1)
    monkeypatch.setattr(held, "RETRY_MAX_SECONDS", 0.3)
    workspace = Workspace(small_disk / "ws")
    config = telegram_config(bot_config, fake, progress=False)
    chat_server.set_handler(echo_reply)
    with RunningBot(make_runtime(config, workspace, tmp_path)):
        fake.send_message("first", user_id=OWNER)
        fake.wait_for_messages(OWNER, 1)
        # The first turn fully done: its item and then its ledger deleted (a ledger deleted after the disk
        # was filled freed the room the next message was stored in, and the turn failed instead).
        fake.wait_for(lambda: inbox_empty(workspace))
        filler = small_disk / "filler"
        with caplog.at_level(logging.ERROR):
            fill(filler)
            fake.send_message("while full", user_id=OWNER)
            full = fake.wait_for_messages(OWNER, 2)[1]["text"]
            assert "disk of my workspace is full" in full and "no need to send it again" in full
            assert any("No space left" in r.getMessage() for r in caplog.records)
            filler.unlink()
            assert fake.wait_for_messages(OWNER, 3, timeout=15)[2]["text"] == "re: while full"
            fake.wait_for(lambda: inbox_empty(workspace))  # its item completed too
            # Remounting the whole disk read-only fails while the bot holds files open ("busy"), so a
            # read-only file system is mounted over the inbox folder, the first thing a message writes.
            pending = workspace.path("state/inbox/pending")
            pending.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(pending)], check=True)
            try:
                fake.send_message("while read-only", user_id=OWNER)
                assert "read-only" in fake.wait_for_messages(OWNER, 4)[3]["text"]
            finally:
                subprocess.run(["umount", str(pending)], check=True)
            assert fake.wait_for_messages(OWNER, 5, timeout=15)[4]["text"] == "re: while read-only"
        fake.send_message("after", user_id=OWNER)
        assert fake.wait_for_messages(OWNER, 6)[5]["text"] == "re: after"
    assert texts(fake)[0] == "re: first"
    assert asked(chat_server) == ["first", "while full", "while read-only", "after"]  # each once
    assert sum("cannot store messages" in r.getMessage() for r in caplog.records) == 2  # once per outage
    assert_no_torn_files(workspace.root)
    assert Inbox(workspace).pending() == []


def inbox_empty(workspace: Workspace) -> bool:
    """No pending item and no ledger left in the inbox."""
    return not workspace.list("state/inbox/pending/**/*.json") and not workspace.list("state/inbox/pending/**/*.ledger")


def asked(chat_server) -> list[str]:
    """The user messages the model was asked to answer, in order."""
    return [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests]


def test_a_fetched_message_is_answered_while_its_sync_fails_and_confirmed_only_once_synced(
    fake, bot_config, tmp_path, chat_server, monkeypatch
):
    """A fetched message's turn starts while its file is fsynced; the getUpdates offset that confirms it waits for
    the sync. While the sync fails (an I/O error), its turn goes on and the offset stays at it (Telegram delivers
    it again, it is not answered twice); once the sync works, the next getUpdates confirms it, its id is logged
    as seen, and the answer follows."""
    monkeypatch.setattr(held, "RETRY_FIRST_SECONDS", 0.05)
    monkeypatch.setattr(held, "RETRY_MAX_SECONDS", 0.1)
    failures = {"left": 3}
    asked_model, release = threading.Event(), threading.Event()
    real_sync = Inbox.sync_accepted

    def flaky_sync(self: Inbox) -> bool:
        # Fails three times, and until the turn asked the model: its confirmation cannot come before that.
        if self.unsynced and (failures["left"] > 0 or not asked_model.is_set()):
            failures["left"] = max(0, failures["left"] - 1)
            raise OSError(5, "Input/output error")
        return real_sync(self)

    def slow_echo(request: dict) -> object:
        asked_model.set()
        release.wait(15)
        return echo_reply(request)

    monkeypatch.setattr(Inbox, "sync_accepted", flaky_sync)
    workspace = Workspace(tmp_path / "ws")
    config = telegram_config(bot_config, fake, progress=False)
    chat_server.set_handler(slow_echo)
    with RunningBot(make_runtime(config, workspace, tmp_path)):
        update_id = fake.send_message("hello", user_id=OWNER)["update_id"]
        fake.wait_for(lambda: any(int(c["params"].get("offset") or 0) > update_id for c in fake.calls("getUpdates")))
        assert not fake.messages(OWNER)  # confirmed while its turn waits for the model
        assert str(update_id) in workspace.read_text("state/inbox/seen.log").split()
        release.set()
        assert fake.wait_for_messages(OWNER, 1)[0]["text"] == "re: hello"
        fake.wait_for(lambda: inbox_empty(workspace))
        offsets = [int(c["params"].get("offset") or 0) for c in fake.calls("getUpdates")]
    confirming = next(i for i, offset in enumerate(offsets) if offset > update_id)
    assert offsets[confirming - 3 : confirming] == [update_id] * 3  # held at it while the sync failed
    assert asked(chat_server) == ["hello"]  # answered once: the deliveries meanwhile were known
