"""The interactive terminal chat on a real pseudo-terminal: arrow keys edit and recall lines
(no ``^[[A``), and reminders set in the terminal are delivered there."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from assistant_framework.stores.reminders import ReminderStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.frontends.console_extras import ConsoleReminders
from tests.test_console import REPO, write_config

pty = pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")


class Terminal:
    """The bot on a pty: ``type`` keys, ``wait_for`` output."""

    def __init__(self, argv: list[str]) -> None:
        self.master, slave = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}
        env["TERM"] = "xterm"
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=REPO, env=env, close_fds=True)
        os.close(slave)
        self.output = ""

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                self.output += os.read(self.master, 65536).decode("utf-8", "replace")
            except OSError:
                pass

    def wait_for(self, text: str, timeout: float = 30, start: int = 0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output[start:]:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not appear; output so far:\n{self.output[-3000:]}")
            self._read(0.2)

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)


def test_arrow_keys_recall_history_and_reminders_arrive(tmp_path: Path, chat_server, test_skills_dir) -> None:
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    ws = Workspace(tmp_path / "ws")
    store = ReminderStore(ws)
    store.add("console", "stretch your legs", datetime.now(timezone.utc) - timedelta(seconds=5), "UTC")
    seen: list[str] = []
    chat_server.set_handler(lambda request: (seen.append(request["messages"][-1]["content"]), '{"reply": "ok!"}')[1])
    term = Terminal([sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config),
                     "--workspace", str(ws.root)])
    try:
        term.wait_for("you> ")
        term.wait_for("⏰ stretch your legs")  # due before the start: delivered at once
        term.type("hello there\r")
        term.wait_for("ok!")
        # The next prompt (readline reading again), searched after the reply: it may have come in
        # the same read as the reply, so not from the output's end.
        term.wait_for("you> ", start=term.output.index("ok!"))
        mark = len(term.output)
        term.type("\x1b[A\r")  # Up, Enter: the last line again
        term.wait_for("ok!", start=mark)
        assert "^[[A" not in term.output
        store.add("console", "drink water", datetime.now(timezone.utc), "UTC")  # due while the chat runs
        term.wait_for("⏰ drink water", timeout=30)
        term.type("\x04")  # Ctrl-D
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert sum(m.startswith("hello there") for m in seen) == 2, seen
    assert all(r["status"] == "delivered" for r in store.list())
    assert "hello there" in (ws.root / "state" / "console_history").read_text()


def test_console_reminders_deliver_only_this_chats_due_reminders(tmp_path: Path) -> None:
    store = ReminderStore(Workspace(tmp_path / "ws"))
    now = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
    store.add("console", "due", now - timedelta(minutes=1), "UTC")
    store.add("console", "later", now + timedelta(hours=1), "UTC")
    store.add(12345, "telegram's", now - timedelta(minutes=1), "UTC")
    shown: list[str] = []
    reminders = ConsoleReminders(store, "console", shown.append, clock=lambda: now)
    assert reminders.tick() == 1 and shown == ["⏰ due"]
    assert reminders.tick() == 0  # delivered once
    assert {r["text"]: r["status"] for r in store.list()} == {"due": "delivered", "later": "pending", "telegram's": "pending"}
