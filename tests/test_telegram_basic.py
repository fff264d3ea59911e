"""Telegram end to end: real PTB Application on run_polling against FakeBotAPI and FakeChatServer."""

from __future__ import annotations

import pytest

from tests.fakes.bot_api import FakeBotAPI
from tests.telegram_harness import OWNER, STRANGER, RunningBot, all_bot_texts, make_runtime, snapshot, \
    telegram_config, texts


@pytest.fixture
def fake():
    with FakeBotAPI() as api:
        yield api


@pytest.fixture
def bot(fake, bot_config, workspace, tmp_path):
    runtime = make_runtime(telegram_config(bot_config, fake), workspace, tmp_path)
    with RunningBot(runtime) as running:
        yield running


def test_hello_round_trip(fake, bot, chat_server):
    chat_server.enqueue('{"reply": "Hello **there**!"}')
    fake.send_message("hello")
    msgs = fake.wait_for_messages(OWNER, 1)
    assert msgs[0]["text"] == "Hello there!"
    assert {"type": "bold", "offset": 6, "length": 5} in msgs[0]["entities"]
    assert chat_server.chat_requests[-1]["messages"][-1]["content"].startswith("hello")
    assert fake.calls("sendChatAction")
    assert [c["command"] for c in fake.commands()][:2] == ["help", "now"]
