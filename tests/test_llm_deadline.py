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
#: The deadline of the calls that must have received something before it passes (a chunk, a keep-alive): the
#: fake answers its first bytes at once, so half a second leaves a loaded machine's scheduling to spare; the calls
#: that need nothing before their deadline wait 0.3 s. Every call here waits its deadline out.
DEADLINE = 0.5


def client_for(server: FakeChatServer, timeout: float) -> LLMClient:
    return LLMClient.from_section(
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
        client_for(chat_server, DEADLINE).complete(MESSAGES, stream=True, on_delta=shown.append)
    err = info.value
    assert err.kind == "timeout"
    message = err.user_message()
    assert "'trickle'" in message and "not finished within 0.5 s" in message
    assert "3 characters" in message  # what arrived before the stall
    assert shown == ["Hel"]


def test_silent_stream_after_a_chunk_is_bounded_by_the_same_deadline(chat_server):
    # After one chunk nothing at all: the read timeout alone is per read; the deadline covers the call.
    chat_server.enqueue({"content": "x", "stream_chunks": ["x"], "chunk_delay": 20})
    with pytest.raises(LLMError) as info:
        client_for(chat_server, 0.3).complete(MESSAGES, stream=True)
    assert info.value.kind == "timeout"
    assert "not finished within 0.3 s" in info.value.user_message()


def test_a_stream_that_finishes_in_time_is_untouched(chat_server):
    chat_server.enqueue({"content": "all good", "keepalive_every": 0.05, "keepalive_for": 0.2})
    result = client_for(chat_server, 5).complete(MESSAGES, stream=True)
    assert result.text == "all good"


def test_the_user_is_told_what_happened_when_the_model_trickles(fake, start_bot, chat_server):  # noqa: F811
    def short_timeout(config: dict) -> None:
        config["llm"]["runners"][0]["timeout_seconds"] = 0.3  # no call has to finish

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
    final = fake.wait_for(lambda: [t for t in texts(fake) if "not finished within 0.3 s" in t], timeout=15)
    assert "timed out" in final[0]


# -- issue 26.8: an answer that is not streamed is bounded by the same deadline ----------------

TRICKLE = {"every": 0.1, "for": 20}


@pytest.mark.parametrize(
    "trickle",
    [
        TRICKLE,  # whitespace keep-alives in a chunked body (hosted APIs to non-streamed requests)
        {**TRICKLE, "framing": "close"},  # a body ended by closing the connection, which never comes
        {**TRICKLE, "where": "head"},  # the headers themselves trickle
    ],
    ids=["chunked", "close-delimited", "headers"],
)
def test_a_trickling_answer_that_is_not_streamed_ends_at_the_deadline(chat_server, trickle):
    chat_server.enqueue({"content": "late", "trickle": trickle})
    client = client_for(chat_server, DEADLINE)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    err = info.value
    assert err.kind == "timeout", err
    assert "'trickle'" in err.user_message() and "not finished within 0.5 s" in err.user_message()
    if trickle.get("where") != "head":
        assert "blank keep-alive" in err.user_message()
    # The pool is not poisoned: the next call on the same client gets its answer.
    chat_server.enqueue("fine")
    assert client.complete(MESSAGES).text == "fine"


def test_an_event_stream_ended_by_closing_the_connection_is_bounded_too(chat_server):
    chat_server.enqueue(
        {"content": "Hel", "stream_chunks": ["Hel"], "framing": "close", "keepalive_every": 0.1, "keepalive_for": 20}
    )
    with pytest.raises(LLMError) as info:
        client_for(chat_server, 0.3).complete(MESSAGES, stream=True)
    assert info.value.kind == "timeout" and "not finished within 0.3 s" in info.value.user_message()
    # Cut at the deadline, not read to the end: the server sees the client gone while it still sends.
    assert _eventually(lambda: chat_server.streams_cut == 1)


def _eventually(condition, timeout: float = 5.0) -> bool:
    import time

    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def test_keep_alives_before_an_answer_in_time_are_harmless(chat_server):
    """Whitespace before the JSON is allowed by JSON; a close-delimited stream that ends is whole."""
    chat_server.enqueue(
        {"content": "kept", "trickle": {"every": 0.05, "for": 0.3}},
        {"content": "streamed", "framing": "close"},
    )
    client = client_for(chat_server, 5)
    assert client.complete(MESSAGES).text == "kept"
    assert client.complete(MESSAGES, stream=True).text == "streamed"


def test_the_user_is_told_when_an_answer_that_is_not_streamed_trickles(fake, start_bot, chat_server):  # noqa: F811
    def short_timeout(config: dict) -> None:
        config["llm"]["runners"][0]["timeout_seconds"] = 0.3  # no call has to finish
        config["llm"]["stream"] = False  # the model call is not streamed (telegram.stream only shows one)

    start_bot(config_patch=short_timeout, stream=False)
    chat_server.set_handler(lambda req: {"content": '{"reply": "late"}', "trickle": TRICKLE})
    fake.send_message("hello?")
    final = fake.wait_for(lambda: [t for t in texts(fake) if "not finished within 0.3 s" in t], timeout=15)
    assert "timed out" in final[0] and "late" not in final[0]


def test_status_is_not_held_by_a_trickling_model_list(chat_server):
    """``/status`` pings ``GET /models`` with 5 s for the whole answer (here the runner's 0.3 s)."""
    chat_server.models_trickle = {**TRICKLE, "where": "head"}
    ok, message = client_for(chat_server, 0.3).ping()
    assert not ok and "not finished within 0.3 s" in message, message
