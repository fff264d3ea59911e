"""A chat turn's reply goes out before the turn writes its exchange (the history and the memory log): the user
waits for the send, not for those files (messaging_llm_bot/agent/keeping.py, conversation/handed.py). The
exchange is recorded with the reply in the inbox's ledger; when a kill comes after the send and before the writes
ended, the message stays in the inbox and the next start writes what is missing from the record, sending nothing
and asking the model nothing.

The real bot process (Telegram, long polling, against FakeBotAPI and FakeChatServer, memory on). Where the kill
lands is made sure of: while the model answers, the test takes the lock of the chat's memory log (a workspace
file lock, an ``flock`` shared with other processes), so the turn's writes stop after the history, before the
reply's log line; the bot is SIGKILLed there.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from assistant_framework.inbox import Inbox
from assistant_framework.workspace import Workspace
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer


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


def user_lines(model: FakeChatServer) -> list[str]:
    """The first line of the last message of every chat request the model got."""
    return [str(r["messages"][-1]["content"]).split("\n")[0] for r in model.chat_requests if r.get("messages")]


def exchanges(history: Path) -> list[str]:
    return [m["content"] for m in json.loads(history.read_text())] if history.exists() else []


def test_a_kill_after_the_reply_went_out_before_its_exchange_was_kept_loses_none_of_it(tmp_path, bot_config):
    locks: list[LogLocks] = []

    def model_answer(request: dict) -> str:
        if str(request["messages"][-1]["content"]).startswith("second words") and locks and not locks[0].fds:
            locks[0].take()  # the turn's writes stop before the reply's log line
        return echo_reply(request)

    with FakeBotAPI() as fake, FakeChatServer() as model:
        model.set_handler(model_answer)

        def sent_id() -> int:
            return [c["message_id"] for c in fake.calls("sendMessage") if "message_id" in c][-1]

        base = dict(
            bot_config,
            llm={**bot_config["llm"], "runners": [{"name": "fake", "base_url": model.base_url, "model": "fake-model"}]},
        )
        memory = {"enabled": True, "extract_facts": False, "episodes": False, "profile": {"enabled": False}}
        config = write_bot_config(tmp_path / "config.json", base, fake, extra={"memory": memory})
        workspace = tmp_path / "workspace"
        with BotProcess(config, workspace, tmp_path / "bot.log") as bot:
            bot.start().wait_ready()
            fake.send_message("first words", user_id=1)
            fake.wait_for(
                lambda: (
                    "re: first words"
                    in exchanges(next(workspace.glob("conversations/tg_1*/history.json"), workspace / "-"))
                )
            )
            folder = next(workspace.glob("conversations/tg_1*"))
            history = folder / "history.json"
            locks.append(LogLocks(workspace, folder.name))
            try:
                fake.send_message("second words", user_id=1)
                # The reply is out while the turn's writes wait: the history has the pair, the log not yet.
                fake.wait_for(lambda: sent_texts(fake, 1) == ["re: first words", "re: second words"])
                fake.wait_for(lambda: "re: second words" in exchanges(history))
                # ... and its part is in the ledger (a kill before that record resends it: docs/reliability.md).
                fake.wait_for(lambda: [i.parts for i in Inbox(Workspace(workspace)).pending()] == [{0: sent_id()}])
                bot.kill()
            finally:
                locks[0].release()
            pending = Inbox(Workspace(workspace)).pending()
            assert [item.reply for item in pending] == ["re: second words"]
            assert pending[0].keeping is not None and not pending[0].kept

            bot.start().wait_ready()
            fake.wait_for(lambda: Inbox(Workspace(workspace)).pending() == [])
            # Once each in the history and in the memory log; the replay sent nothing and asked the model nothing.
            assert exchanges(history) == ["first words", "re: first words", "second words", "re: second words"]
            logged = "".join(p.read_text() for p in folder.glob("*.jsonl"))
            assert logged.count('"re: second words"') == 1
            assert sent_texts(fake, 1) == ["re: first words", "re: second words"]
            assert user_lines(model).count("second words") == 1

            fake.send_message("third words", user_id=1)
            fake.wait_for(lambda: len(sent_texts(fake, 1)) == 3)
            prompt = [m.get("content") for m in model.chat_requests[-1]["messages"]]
            assert prompt.count("re: second words") == 1  # the next turn reads the kept exchange, once
            assert bot.terminate() == 0
        assert "Traceback" not in bot.log_text()
