"""The crash test: the real bot process is SIGKILLed at random moments while 200 messages arrive in
10 chats; after restarts every message is answered once, in order per chat. Only a send in flight at
the instant of a kill may repeat (at most one repeated reply per chat per kill)."""

from __future__ import annotations

import random
import threading
import time

import pytest

from assistant_framework.inbox import Inbox
from assistant_framework.workspace import Workspace
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer

CHATS = list(range(1, 11))
MESSAGES = 200
KILLS = 3
SEED = 20260303


def split_repeats(sent: list[str]) -> tuple[list[str], int]:
    """Drop immediate repeats (a reply sent again after a kill); returns (unique sequence, repeats)."""
    out: list[str] = []
    repeats = 0
    for text in sent:
        if out and out[-1] == text:
            repeats += 1
            continue
        out.append(text)
    return out, repeats


@pytest.mark.timeout(120)
def test_sigkill_three_times_loses_nothing_and_keeps_order(tmp_path, bot_config):
    rng = random.Random(SEED)
    with FakeBotAPI() as fake, FakeChatServer(latency=0.03) as model:
        model.set_handler(echo_reply)
        base = dict(bot_config, llm={**bot_config["llm"], "runners": [
            {"name": "fake", "base_url": model.base_url, "model": "fake-model", "timeout_seconds": 10}]})
        config = write_bot_config(tmp_path / "config.json", base, fake, allowed=CHATS,
                                  runtime={"shutdown_timeout_seconds": 10})
        workspace = tmp_path / "workspace"
        expected: dict[int, list[str]] = {chat: [] for chat in CHATS}
        for i in range(MESSAGES):
            chat = CHATS[i % len(CHATS)]
            expected[chat].append(f"re: m{i:03d} in chat {chat}")

        def user_writes() -> None:
            for i in range(MESSAGES):
                chat = CHATS[i % len(CHATS)]
                fake.send_message(f"m{i:03d} in chat {chat}", user_id=chat)
                time.sleep(0.02)

        with BotProcess(config, workspace, tmp_path / "bot.log") as bot:
            bot.start().wait_ready()
            writer = threading.Thread(target=user_writes, daemon=True)
            writer.start()
            for _ in range(KILLS):
                time.sleep(rng.uniform(0.3, 1.5))
                bot.kill()
                bot.start().wait_ready()
            writer.join(30)

            def all_answered() -> bool:
                return all(len(set(sent_texts(fake, chat))) >= len(expected[chat]) for chat in CHATS)

            fake.wait_for(all_answered, timeout=60)
            assert bot.terminate() == 0, bot.run_log()[-3000:]

        total_repeats = 0
        for chat in CHATS:
            unique, repeats = split_repeats(sent_texts(fake, chat))
            assert unique == expected[chat], f"chat {chat}: replies out of order or missing"
            assert repeats <= KILLS, f"chat {chat}: {repeats} repeated replies after {KILLS} kills"
            total_repeats += repeats
        assert total_repeats <= KILLS * len(CHATS)
        assert Inbox(Workspace(workspace)).pending() == []
        # Every message reached the model at least once; one asked twice was cut by a kill before its reply was stored.
        # (A request cut off mid-body by a kill arrives without messages.)
        asked = {r["messages"][-1]["content"].split("\n")[0] for r in model.chat_requests if r.get("messages")}
        assert asked == {f"m{i:03d} in chat {CHATS[i % len(CHATS)]}" for i in range(MESSAGES)}
        assert "Traceback" not in bot.log_text()
