"""A chat turn's reply goes out before the turn writes its exchange (the history and the memory log): the user
waits for the send, not for those files (messaging_llm_bot/agent/keeping.py, conversation/handed.py). The
exchange is recorded with the reply in the inbox's ledger; when a kill comes after the send and before the writes
ended, the message stays in the inbox and the next start writes what is missing from the record, sending nothing
and asking the model nothing.

The real bot process, memory on, on Telegram (long polling, FakeBotAPI) and on Signal (FakeSignalDaemon), with
FakeChatServer. Where the kill lands is made sure of: while the model answers, the test takes the lock of the
chat's memory log (a workspace file lock, an ``flock`` shared with other processes), so the turn's writes stop
after the history, before the reply's log line; the bot is SIGKILLed there.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant_framework.inbox import Inbox
from assistant_framework.workspace import Workspace
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.signal_daemon import FakeSignalDaemon
from tests.signal_harness import BOT, OWNER
from tests.waiting import wait_until

MEMORY = {"enabled": True, "extract_facts": False, "episodes": False, "profile": {"enabled": False}}


class LogLocks:
    """Holds the locks of a conversation's memory log files (every day's: the turn logged its user line)."""

    def __init__(self, workspace: Path, folder: str) -> None:
        self.pattern, self.workspace, self.fds = f"state/locks/conversations__{folder}__*.jsonl.lock", workspace, []

    def take(self) -> None:
        for path in self.workspace.glob(self.pattern):
            fd = os.open(path, os.O_RDWR)
            fcntl.flock(fd, fcntl.LOCK_EX)
            self.fds.append(fd)

    def release(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


class Telegram:
    def __init__(self, stack: contextlib.ExitStack, tmp_path: Path, base: dict) -> None:
        self.fake = stack.enter_context(FakeBotAPI())
        self.config = write_bot_config(tmp_path / "config.json", base, self.fake, extra={"memory": MEMORY})

    def start(self, bot: BotProcess) -> None:
        bot.start().wait_ready()

    def stopped(self) -> None:
        pass

    def send(self, text: str) -> None:
        self.fake.send_message(text, user_id=1)

    def texts(self) -> list[str]:
        return sent_texts(self.fake, 1)


class Signal:
    def __init__(self, stack: contextlib.ExitStack, tmp_path: Path, base: dict) -> None:
        self.daemon = stack.enter_context(FakeSignalDaemon(BOT, keepalive_seconds=0.1))
        signal = {"enabled": True, "base_url": self.daemon.base_url, "account": BOT, "allowed": [OWNER]}
        config = {
            **base,
            "telegram": {"token": ""},
            "memory": MEMORY,
            "runtime": {**base["runtime"], "log_level": "INFO"},
            "signal": signal,
        }
        self.config = tmp_path / "config.json"
        self.config.write_text(json.dumps(config))

    def start(self, bot: BotProcess) -> None:
        bot.start()
        self.daemon.wait_connected(30)

    def stopped(self) -> None:
        wait_until(lambda: self.daemon.connected == 0, what="the daemon noticing the dead event stream")

    def send(self, text: str) -> None:
        self.daemon.message(OWNER, text)

    def texts(self) -> list[str]:
        return [s["message"] for s in self.daemon.sent_to(OWNER)]


def user_lines(model: FakeChatServer) -> list[str]:
    """The first line of the last message of every chat request the model got."""
    return [str(r["messages"][-1]["content"]).split("\n")[0] for r in model.chat_requests if r.get("messages")]


def exchanges(history: Path | None) -> list[str]:
    return [m["content"] for m in json.loads(history.read_text())] if history and history.exists() else []


def pending(workspace: Path) -> list:
    return Inbox(Workspace(workspace)).pending()


@contextlib.contextmanager
def chat_and_model(channel: type, tmp_path: Path, bot_config: dict, answer) -> Iterator[tuple]:
    with contextlib.ExitStack() as stack:
        model = stack.enter_context(FakeChatServer())
        model.set_handler(answer)
        runner = {"name": "fake", "base_url": model.base_url, "model": "fake-model"}
        yield channel(stack, tmp_path, dict(bot_config, llm={**bot_config["llm"], "runners": [runner]})), model


@pytest.mark.parametrize("channel", [Telegram, Signal], ids=["telegram", "signal"])
def test_a_kill_after_the_reply_went_out_before_its_exchange_was_kept_loses_none_of_it(tmp_path, bot_config, channel):
    locks: list[LogLocks] = []

    def model_answer(request: dict) -> str:
        if str(request["messages"][-1]["content"]).startswith("second words") and locks and not locks[0].fds:
            locks[0].take()  # the turn's writes stop before the reply's log line
        return echo_reply(request)

    workspace = tmp_path / "workspace"
    with chat_and_model(channel, tmp_path, bot_config, model_answer) as (chat, model):
        with BotProcess(chat.config, workspace, tmp_path / "bot.log") as bot:
            chat.start(bot)
            chat.send("first words")
            wait_until(
                lambda: "re: first words" in exchanges(next(workspace.glob("conversations/*/history.json"), None))
            )
            history = next(workspace.glob("conversations/*/history.json"))
            locks.append(LogLocks(workspace, history.parent.name))
            try:
                chat.send("second words")
                # The reply is out while the turn's writes wait: the history has the pair, the log not yet ...
                wait_until(lambda: chat.texts() == ["re: first words", "re: second words"], what="the second reply")
                wait_until(lambda: "re: second words" in exchanges(history))
                # ... and its part is in the ledger (a kill before that record resends it: docs/reliability.md).
                wait_until(lambda: [list(i.parts) for i in pending(workspace)] == [[0]], what="the part's record")
                bot.kill()
            finally:
                locks[0].release()
            [item] = pending(workspace)
            assert item.reply == "re: second words" and item.keeping is not None and not item.kept
            chat.stopped()

            chat.start(bot)
            wait_until(lambda: pending(workspace) == [], what="the replay completing the message")
            # Once each in the history and in the memory log; the replay sent nothing and asked the model nothing.
            assert exchanges(history) == ["first words", "re: first words", "second words", "re: second words"]
            logged = "".join(p.read_text() for p in history.parent.glob("*.jsonl"))
            assert logged.count('"re: second words"') == 1
            assert chat.texts() == ["re: first words", "re: second words"]
            assert user_lines(model).count("second words") == 1

            chat.send("third words")
            wait_until(lambda: len(chat.texts()) == 3, what="the third reply")
            prompt = [m.get("content") for m in model.chat_requests[-1]["messages"]]
            assert prompt.count("re: second words") == 1  # the next turn reads the kept exchange, once
            assert bot.terminate() == 0
        assert "Traceback" not in bot.log_text()
