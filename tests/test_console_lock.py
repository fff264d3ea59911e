"""One terminal chat per workspace: a second one refuses in one sentence naming what holds the workspace
(``state/console.lock``, another terminal chat) and exits 2, before it reads a line. Two at once would both
answer the message a crash left unanswered, both deliver the terminal conversation's reminders and
interleave one conversation. The Telegram bot and a terminal chat share a workspace (each has its own
conversations, inbox items and reminders): a chat starts and answers beside a running bot. The real
terminal chat and bot as subprocesses against the fake model server and the fake Bot API."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import preload
from tests.console_harness import REPO, run_bot
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config

LOCK = "state/console.lock"


def chat_args(config: Path, ws: Path) -> list[str]:
    return ["--frontend", "console", "--config", str(config), "--workspace", str(ws)]


def start_chat(config: Path, ws: Path) -> subprocess.Popen:
    """A terminal chat with piped input, kept running until its stdin is closed."""
    return preload.popen(
        [sys.executable, "-m", "messaging_llm_bot", *chat_args(config, ws)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
    )


def say(chat: subprocess.Popen, text: str) -> str:
    """Type a line into a running chat and read its reply block (up to the empty line that ends it)."""
    assert chat.stdin is not None and chat.stdout is not None
    chat.stdin.write(text + "\n")
    chat.stdin.flush()
    block = []
    while True:
        line = chat.stdout.readline()
        assert line, f"the chat ended before it answered {text!r}: {block}"
        if line == "\n":
            return "".join(block)
        block.append(line)


@pytest.fixture
def config(tmp_path: Path, bot_config: dict, chat_server, fake) -> Path:
    chat_server.set_handler(echo_reply)
    return write_bot_config(tmp_path / "config.json", bot_config, fake)


@pytest.mark.timeout(120)
def test_a_second_terminal_chat_refuses_in_one_sentence_and_exits_2(tmp_path: Path, config: Path, chat_server):
    ws = tmp_path / "ws"
    first = start_chat(config, ws)
    try:
        assert say(first, "hello") == "re: hello\n"
        second = run_bot(chat_args(config, ws), stdin="are you there\n")
        said = [line for line in second.stderr.splitlines() if line.strip()]
        assert second.returncode == 2, second.stderr
        assert len(said) == 1, said
        assert "another terminal chat" in said[0] and str(ws) in said[0] and LOCK in said[0], said
        assert second.stdout == ""
        assert say(first, "still me") == "re: still me\n"  # the first one goes on
    finally:
        first.communicate(timeout=30)  # EOF on its input: the chat ends as after Ctrl-D
    assert first.returncode == 0
    asked = [r["messages"][-1]["content"] for r in chat_server.chat_requests]
    assert "are you there" not in asked  # the refused chat read nothing
    after = run_bot(chat_args(config, ws), stdin="again\n")  # the lock went with the first chat
    assert after.returncode == 0, after.stderr
    assert after.stdout == "re: again\n\n"


@pytest.mark.timeout(120)
def test_a_terminal_chat_runs_beside_the_telegram_bot_on_one_workspace(tmp_path: Path, config: Path, fake):
    ws = tmp_path / "ws"
    with BotProcess(config, ws, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        chat = run_bot(chat_args(config, ws), stdin="hello from the terminal\n")
        assert chat.returncode == 0, chat.stderr
        assert chat.stdout == "re: hello from the terminal\n\n"
        fake.send_message("hello from telegram", user_id=1)
        fake.wait_for(lambda: "re: hello from telegram" in sent_texts(fake, 1), timeout=30)
        assert bot.terminate() == 0
