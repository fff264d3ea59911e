"""The terminal chat keeps model-bound messages in the durable inbox: a message a SIGKILL cut off is
answered first at the next start; SIGTERM ends the chat with status 0."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from assistant_framework.inbox import Inbox
from assistant_framework.workspace import Workspace
from tests import preload
from tests.console_harness import console_argv, run_bot, write_config
from tests.crash_bot import REPO, echo_reply


def start_console(config, workspace) -> subprocess.Popen:
    return preload.popen(
        console_argv(config, workspace),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.timeout(60)
def test_message_cut_off_by_sigkill_is_answered_at_the_next_start(tmp_path, chat_server, test_skills_dir):
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    workspace = tmp_path / "ws"
    chat_server.enqueue({"content": json.dumps({"reply": "never shown"}), "delay": 5})
    with start_console(config, workspace) as proc:
        try:
            proc.stdin.write("question one\n")
            proc.stdin.flush()
            assert chat_server.wait_for_requests(1, timeout=20, path="/chat/completions")
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert [i.payload["text"] for i in Inbox(Workspace(workspace)).pending()] == ["question one"]
    chat_server.reset()
    chat_server.set_handler(echo_reply)
    done = run_bot(["--frontend", "console", "--config", str(config), "--workspace", str(workspace)], "second\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "re: question one\n\nre: second\n\n"
    assert "left unanswered by the last run" in done.stderr
    assert Inbox(Workspace(workspace)).pending() == []


@pytest.mark.timeout(60)
def test_sigterm_ends_the_terminal_chat_with_status_0(tmp_path, chat_server, test_skills_dir):
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    chat_server.set_handler(echo_reply)
    with start_console(config, tmp_path / "ws") as proc:
        try:
            proc.stdin.write("hello\n")
            proc.stdin.flush()
            assert proc.stdout.readline() == "re: hello\n"
            time.sleep(0.2)  # waiting for the next line now
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    assert Inbox(Workspace(tmp_path / "ws")).pending() == []
