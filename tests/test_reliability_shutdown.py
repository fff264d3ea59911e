"""Graceful shutdown of the real bot process: SIGTERM lets in-flight turns finish within
runtime.shutdown_timeout_seconds, takes no new work, exits 0, and leaves unfinished messages in the
inbox for the next start."""

from __future__ import annotations

import json
import re
import signal
import threading

import pytest

from assistant_framework.inbox import Inbox
from assistant_framework.workspace import Workspace
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.waiting import for_load, wait_until

OWNER = 1


def stopping_with_one_turn(log: str) -> bool:
    """conversation/shutdown.py's line as a SIGTERM's stop begins with one turn running."""
    return re.search(r"SIGTERM: stopping; waiting up to \d+ s for 1 turn\(s\) in flight", log) is not None


@pytest.fixture
def fake():
    with FakeBotAPI() as api:
        yield api


def _config(tmp_path, bot_config, fake, timeout: float, model_timeout: float = 10):
    # busy_mode queue: a message sent during a turn waits for its own (steer would join it to the turn).
    llm = {**bot_config["llm"], "runners": [{**bot_config["llm"]["runners"][0], "timeout_seconds": model_timeout}]}
    return write_bot_config(
        tmp_path / "config.json",
        dict(bot_config, llm=llm),
        fake,
        runtime={"shutdown_timeout_seconds": timeout, "busy_mode": "queue"},
    )


@pytest.mark.timeout(60)
def test_sigterm_lets_the_turn_in_flight_finish_and_exits_0(tmp_path, bot_config, fake, chat_server):
    release = threading.Event()

    def slow(request: dict) -> str:  # the model answers once the bot is stopping: the turn is in flight
        release.wait(60)
        return json.dumps({"reply": "finished after the signal"})

    chat_server.set_handler(slow)
    config = _config(tmp_path, bot_config, fake, timeout=20)
    with BotProcess(config, tmp_path / "ws", tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.send_message("slow question", user_id=OWNER)
        assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
        fake.send_message("arrives while stopping", user_id=OWNER)  # queued behind the turn: left for later
        fake.wait_for(lambda: fake.polls_started() >= 3)  # the next poll asked for: both taken into the inbox
        assert bot.proc is not None
        bot.proc.send_signal(signal.SIGTERM)
        try:  # the stop has begun with the turn running (conversation/shutdown.py's line), then it may finish
            wait_until(lambda: stopping_with_one_turn(bot.run_log()), for_load(15), "the stop's line with the turn")
        finally:
            release.set()
        assert bot.wait(timeout=30) == 0, bot.run_log()[-3000:]
        log = bot.run_log()
    assert sent_texts(fake, OWNER) == ["finished after the signal"]
    pending = Inbox(Workspace(tmp_path / "ws")).pending()
    assert [Inbox_text(i) for i in pending] in ([], ["arrives while stopping"])
    assert "Traceback" not in log
    # The next start answers what the stop left behind (and nothing twice).
    chat_server.set_handler(echo_reply)
    with BotProcess(config, tmp_path / "ws", tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: len(sent_texts(fake, OWNER)) >= 2, timeout=15)
        assert bot.terminate() == 0
    assert sent_texts(fake, OWNER) == ["finished after the signal", "re: arrives while stopping"]


@pytest.mark.timeout(60)
def test_turn_longer_than_the_bound_stays_in_the_inbox_and_is_answered_next_start(
    tmp_path, bot_config, fake, chat_server
):
    chat_server.enqueue({"content": json.dumps({"reply": "too late"}), "delay": 20})
    # The bound is what is waited out: small, as nothing races it (the answer comes 20 s later).
    config = _config(tmp_path, bot_config, fake, timeout=0.3, model_timeout=30)
    with BotProcess(config, tmp_path / "ws", tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.send_message("very slow question", user_id=OWNER)
        assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
        assert bot.terminate(timeout=15) == 0, bot.run_log()[-3000:]
        log = bot.run_log()
    assert "did not finish" in log and "inbox" in log
    assert stopping_with_one_turn(log)  # the turn was in flight when the stop began
    assert sent_texts(fake, OWNER) == []
    assert [Inbox_text(i) for i in Inbox(Workspace(tmp_path / "ws")).pending()] == ["very slow question"]
    chat_server.reset()
    chat_server.set_handler(echo_reply)
    with BotProcess(config, tmp_path / "ws", tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: sent_texts(fake, OWNER), timeout=15)
        assert bot.terminate() == 0
    assert sent_texts(fake, OWNER) == ["re: very slow question"]
    assert Inbox(Workspace(tmp_path / "ws")).pending() == []


def Inbox_text(item) -> str:  # noqa: N802 - reads like the inbox field it extracts
    """The message text of an inbox item (a raw Telegram update)."""
    return item.payload["message"]["text"]


@pytest.mark.timeout(60)
def test_sigterm_while_the_bot_is_still_starting_stops_it(tmp_path, bot_config, fake, chat_server):
    """A SIGTERM after ``Serving @...`` was logged but before the poll ran (once lost: PTB's stop_running() only
    set a marker it had already checked, and the bot never stopped). The Bot API is held at that step
    (deleteWebhook, before the first poll) until the signal has landed in it."""
    config = _config(tmp_path, bot_config, fake, timeout=5)
    held = fake.hold_next("deleteWebhook")
    with BotProcess(config, tmp_path / "ws", tmp_path / "bot.log") as bot:
        try:
            bot.start().wait_ready()
            fake.wait_for(lambda: fake.arrived("deleteWebhook"), timeout=30)
            assert not fake.calls("deleteWebhook")  # the signal lands while the start waits for it
            assert bot.proc is not None
            bot.proc.send_signal(signal.SIGTERM)
            wait_until(lambda: "SIGTERM: stopping" in bot.run_log(), for_load(15), "the stop's line")
        finally:
            held.set()  # the start goes on, into a stop
        assert bot.wait(timeout=20) == 0, bot.run_log()[-3000:]
        assert "Traceback" not in bot.run_log()
