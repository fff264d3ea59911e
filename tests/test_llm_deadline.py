"""A model call has an overall deadline: ``timeout_seconds`` bounds the whole answer (issue 14.8).

A server that sends one chunk and then only keep-alive comments used to hold the chat for as
long as it liked: `requests`' timeout applies to each read, and every comment is a read.
"""

from __future__ import annotations

import pytest

from messaging_llm_bot.llm.client import LLMClient, LLMError
from tests.fakes.chat_server import FakeChatServer
from tests.telegram_harness import OWNER, fake, start_bot, texts  # noqa: F401

MESSAGES = [{"role": "user", "content": "hi"}]


def client_for(server: FakeChatServer, timeout: float) -> LLMClient:
    return LLMClient(
        {
            "runners": [{"name": "trickle", "base_url": server.base_url, "model": "m", "timeout_seconds": timeout}],
            "retries_per_runner": 0,
        }
    )


def test_trickling_stream_times_out_at_the_deadline_and_says_so(chat_server):
    # One chunk, then a keep-alive comment every 0.1 s for 20 s: each read succeeds.
    chat_server.enqueue({"content": "Hel", "stream_chunks": ["Hel"], "keepalive_every": 0.1, "keepalive_for": 20})
    shown: list[str] = []
    with pytest.raises(LLMError) as info:
        client_for(chat_server, 1).complete(MESSAGES, stream=True, on_delta=shown.append)
    err = info.value
    assert err.kind == "timeout"
    message = err.user_message()
    assert "'trickle'" in message and "not finished within 1 s" in message
    assert "3 characters" in message  # what arrived before the stall
    assert shown == ["Hel"]


def test_silent_stream_after_a_chunk_is_bounded_by_the_same_deadline(chat_server):
    # After one chunk nothing at all: the read timeout alone is per read; the deadline covers the call.
    chat_server.enqueue({"content": "x", "stream_chunks": ["x"], "chunk_delay": 20})
    with pytest.raises(LLMError) as info:
        client_for(chat_server, 1).complete(MESSAGES, stream=True)
    assert info.value.kind == "timeout"
    assert "not finished within 1 s" in info.value.user_message()


def test_a_stream_that_finishes_in_time_is_untouched(chat_server):
    chat_server.enqueue({"content": "all good", "keepalive_every": 0.05, "keepalive_for": 0.2})
    result = client_for(chat_server, 5).complete(MESSAGES, stream=True)
    assert result.text == "all good"


def test_the_user_is_told_what_happened_when_the_model_trickles(fake, start_bot, chat_server):  # noqa: F811
    def short_timeout(config: dict) -> None:
        config["llm"]["runners"][0]["timeout_seconds"] = 1

    start_bot(config_patch=short_timeout, stream=True)
    chat_server.set_handler(
        lambda req: {
            "content": '{"reply": "Hel',
            "stream_chunks": ['{"reply": "Hel'],
            "keepalive_every": 0.1,
            "keepalive_for": 20,
        }
    )
    fake.send_message("hello?")
    final = fake.wait_for(lambda: [t for t in texts(fake) if "not finished within 1 s" in t], timeout=15)
    assert "timed out" in final[0]
