"""Chat Completions client against the shared fake model server, over real sockets."""

from __future__ import annotations

import json
import logging
import math
import socket
import threading
import time

import pytest
import requests

from messaging_llm_bot.llm.client import (
    LLMClient,
    LLMError,
    RunnerConfig,
    Usage,
    parse_usage,
)
from messaging_llm_bot.llm.errors import parse_error_body, parse_retry_after
from messaging_llm_bot.llm.pace import ALWAYS_CHARS, CHARS_PER_SECOND, GROWTH, SECONDS, HandOnPace
from messaging_llm_bot.llm.stream import iter_sse_data
from messaging_llm_bot.llm.usage import VisibleStream, split_think, visible_stream_text
from tests.fakes.chat_server import DEFAULT_REPLY, FakeChatServer, hash_embedding

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
SECRET = "sk-test-SECRETKEY-0123456789"


@pytest.fixture
def server():
    with FakeChatServer() as fake:
        yield fake


@pytest.fixture
def server2():
    with FakeChatServer() as fake:
        yield fake


def closed_port_url() -> str:
    """A base_url on which nothing listens (connection refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"


def runner(name: str, base_url: str, **kw) -> dict:
    return {"name": name, "base_url": base_url, "model": f"model-{name}", **kw}


def make_client(*runners: dict, sleeps: list | None = None, **cfg) -> LLMClient:
    config = {"runners": list(runners), "retry_backoff_seconds": 0, **cfg}
    record = sleeps if sleeps is not None else []
    return LLMClient.from_section(config, sleep=record.append)


# ----- plain and streamed ------------------------------------------------------------


def test_plain_completion_sends_chat_completions_body(server):
    server.enqueue("Hello there")
    client = make_client(runner("local", server.base_url))
    result = client.complete(MESSAGES)
    assert result.text == "Hello there"
    assert result.reasoning is None
    assert result.runner == "local"
    assert result.model == "model-local"
    assert result.usage.prompt_tokens is not None and result.usage.completion_tokens is not None
    assert result.usage.cached_tokens is None
    assert result.raw["choices"][0]["message"]["content"] == "Hello there"
    (req,) = server.chat_requests
    assert req.path == "/v1/chat/completions"
    assert req == {"model": "model-local", "messages": MESSAGES, "temperature": 0.3, "max_tokens": 800}
    assert req.headers.get("Authorization") is None


def test_default_reply_when_nothing_is_scripted(server):
    client = make_client(runner("local", server.base_url))
    assert client.complete(MESSAGES).text == DEFAULT_REPLY


def test_handler_decides_when_queue_is_empty(server):
    server.set_handler(lambda req: "echo: " + req["messages"][-1]["content"])
    server.enqueue("queued first")
    client = make_client(runner("local", server.base_url))
    assert client.complete(MESSAGES).text == "queued first"
    assert client.complete(MESSAGES).text == "echo: hi"


def test_streamed_completion_calls_on_delta_with_accumulated_text(server):
    usage = {"prompt_tokens": 11, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 8}}
    server.enqueue({"content": "Hello brave world", "stream_chunks": ["Hello", " brave", " world"], "usage": usage})
    client = make_client(runner("local", server.base_url))
    seen: list[str] = []
    result = client.complete(MESSAGES, stream=True, on_delta=seen.append)
    assert seen == ["Hello", "Hello brave", "Hello brave world"]
    assert result.text == "Hello brave world"
    assert result.usage == Usage(prompt_tokens=11, completion_tokens=3, cached_tokens=8)
    assert result.raw["object"] == "chat.completion"
    assert result.raw["choices"][0]["finish_reason"] == "stop"
    req = server.chat_requests[0]
    assert req["stream"] is True
    assert req["stream_options"] == {"include_usage": True}


def test_a_long_stream_is_handed_on_in_copies_that_add_up_to_its_length_not_its_square(server):
    """The text so far was handed to ``on_delta`` at every delta, each hand-on a copy of it (and each reader after
    it copied it again): 0.9 s of a turn's 1.3 s of CPU for 300,000 characters. Past 4,096 characters it is now
    handed on when it grew by an eighth or when 50 ms passed, and whole at the end."""
    text = "".join(f"word{i % 10} " for i in range(20_000))  # 120,000 characters in 6-character deltas
    server.enqueue({"content": text, "stream_chunks": [text[i : i + 6] for i in range(0, len(text), 6)]})
    handed: list[int] = []
    started = time.monotonic()
    result = make_client(runner("local", server.base_url)).complete(
        MESSAGES, stream=True, on_delta=lambda so_far: handed.append(len(so_far))
    )
    took = time.monotonic() - started
    assert result.text == text and handed[-1] == len(text)
    # every delta while short; then eighths (adding up to GROWTH times the length); then one per SECONDS at most
    bound = ALWAYS_CHARS * (ALWAYS_CHARS // 6 + 1) + (GROWTH + 1 + took / SECONDS) * len(text)
    assert sum(handed) <= bound, f"{sum(handed):,} characters handed on in {len(handed):,} hand-ons ({took:.2f} s)"


def test_past_its_first_characters_the_text_is_handed_on_after_50_ms_or_an_eighth_more():
    """The pace keeps the chat's live text at most 50 ms behind (stretched only past a million characters)."""
    now = [0.0]
    pace = HandOnPace(clock=lambda: now[0])
    assert all(pace.due(n) for n in range(1, ALWAYS_CHARS + 1))  # a short answer: at every delta
    assert not pace.due(ALWAYS_CHARS + 10)  # at once, and less than an eighth more
    now[0] += SECONDS
    assert pace.due(ALWAYS_CHARS + 10)
    grown = (ALWAYS_CHARS + 10) * GROWTH // (GROWTH - 1) + 1
    assert pace.due(grown) and not pace.due(grown + 1)  # an eighth more: at once
    huge = CHARS_PER_SECOND  # a flooding server's answer: its hand-ons at most a second apart
    assert pace.due(huge) and not pace.due(huge + 10)
    now[0] += SECONDS
    assert not pace.due(huge + 10)
    now[0] += 1
    assert pace.due(huge + 10)


def test_stream_decodes_utf8_without_charset(server):
    server.enqueue({"stream_chunks": ["Привет", " 👋", " café"]})
    seen: list[str] = []
    result = make_client(runner("local", server.base_url)).complete(MESSAGES, stream=True, on_delta=seen.append)
    assert result.text == "Привет 👋 café"
    assert seen[-1] == "Привет 👋 café"


def test_server_ignoring_stream_flag_still_answers(server):
    answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "whole answer"}}]}
    server.enqueue({"raw": answer})
    seen: list[str] = []
    result = make_client(runner("local", server.base_url)).complete(MESSAGES, stream=True, on_delta=seen.append)
    assert result.text == "whole answer"
    assert seen == ["whole answer"]
    assert result.usage == Usage()


def test_stream_reasoning_is_separate_and_think_block_is_held_back(server):
    server.enqueue({"content": "answer", "reasoning": "step one", "reasoning_field": "reasoning"})
    server.enqueue({"content": "", "stream_chunks": ["<thi", "nk>secret plan", "</think>", "Visible", " text"]})
    client = make_client(runner("local", server.base_url))
    first = client.complete(MESSAGES, stream=True)
    assert (first.text, first.reasoning) == ("answer", "step one")
    seen: list[str] = []
    second = client.complete(MESSAGES, stream=True, on_delta=seen.append)
    assert second.text == "Visible text"
    assert second.reasoning == "secret plan"
    assert seen == ["Visible", "Visible text"]


def test_stream_without_usage_leaves_usage_unknown(server):
    server.enqueue({"content": "hi there", "usage": None})
    result = make_client(runner("local", server.base_url)).complete(MESSAGES, stream=True)
    assert result.text == "hi there"
    assert result.usage == Usage()
    assert result.usage.as_dict() == {}


def test_mid_stream_error_event_fails_over_to_next_runner(server, server2):
    server.enqueue({"content": "partial", "stream_error": {"code": 502, "message": "Provider disconnected"}})
    server2.enqueue("complete answer")
    client = make_client(runner("flaky", server.base_url), runner("backup", server2.base_url))
    seen: list[str] = []
    result = client.complete(MESSAGES, stream=True, on_delta=seen.append)
    assert result.runner == "backup"
    assert result.text == "complete answer"
    assert seen[0] == "partial" and seen[-1] == "complete answer"


def test_mid_stream_error_on_single_runner_raises(server):
    server.enqueue({"content": "partial", "stream_error": {"message": "upstream exploded"}})
    with pytest.raises(LLMError) as info:
        make_client(runner("local", server.base_url)).complete(MESSAGES, stream=True)
    assert info.value.kind == "server"
    assert "upstream exploded" in info.value.user_message()


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_that_ends_in_an_error_is_a_failure_not_a_reply(server, server2, stream):
    # OpenRouter: an error while the model writes keeps HTTP 200; the choice ends with
    # finish_reason "error" and carries the error (openrouter.ai/docs/api/errors).
    error = {"code": 502, "message": "Provider disconnected unexpectedly"}
    if stream:
        chunks = [
            {"choices": [{"index": 0, "delta": {"content": "The answer is"}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "error", "error": error}]},
        ]
        body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        server.enqueue(
            {"raw": body, "content_type": "text/event-stream"},
            {"raw": body.replace(', "error": ' + json.dumps(error), ""), "content_type": "text/event-stream"},
        )
    else:
        choice = {"index": 0, "message": {"role": "assistant", "content": "The answer is"}, "finish_reason": "error"}
        server.enqueue({"raw": {"choices": [{**choice, "error": error}]}}, {"raw": {"choices": [choice]}})
    server2.enqueue("The answer is 42.")
    client = make_client(runner("openrouter", server.base_url), runner("backup", server2.base_url))
    result = client.complete(MESSAGES, stream=stream)
    assert (result.runner, result.text) == ("backup", "The answer is 42.")
    with pytest.raises(LLMError) as info:  # no error object beside finish_reason "error"
        make_client(runner("openrouter", server.base_url)).complete(MESSAGES, stream=stream)
    assert info.value.kind == "server" and "The answer is" not in info.value.user_message()


def test_a_server_that_drops_the_connection_mid_answer_is_not_called_unreachable(server, server2):
    server.enqueue({"content": "one two three", "stream_cut": True}, {"content": "one two three", "stream_cut": True})
    server2.enqueue("complete answer")
    seen: list[str] = []
    client = make_client(runner("crashy", server.base_url), runner("backup", server2.base_url))
    result = client.complete(MESSAGES, stream=True, on_delta=seen.append)
    assert (result.runner, result.text) == ("backup", "complete answer") and "one two three" in seen
    with pytest.raises(LLMError) as info:
        make_client(runner("crashy", server.base_url)).complete(MESSAGES, stream=True)
    message = info.value.user_message()
    assert "not reachable" not in message and "closed the connection in the middle of the answer" in message


def test_stream_cut_short_is_bad_response(server):
    chunk = {"choices": [{"index": 0, "delta": {"content": "half"}, "finish_reason": None}]}
    server.enqueue({"raw": f"data: {json.dumps(chunk)}\n\n", "content_type": "text/event-stream"})
    with pytest.raises(LLMError) as info:
        make_client(runner("local", server.base_url)).complete(MESSAGES, stream=True)
    assert info.value.kind == "bad_response"


# ----- fallback, retries, timeouts -----------------------------------------------------


def test_runner_fallback_closed_port_then_500_then_good(server, server2):
    dead = closed_port_url()
    server.enqueue({"status": 500}, {"status": 500})
    server2.enqueue("from the good one")
    client = make_client(runner("dead", dead), runner("broken", server.base_url), runner("good", server2.base_url))
    result = client.complete(MESSAGES)
    assert result.runner == "good"
    assert result.text == "from the good one"
    assert len(server.chat_requests) == 2  # one retry on the same runner before moving on
    assert server2.chat_requests[0]["model"] == "model-good"


def test_all_runners_failing_gives_one_clear_sentence(server):
    dead = closed_port_url()
    server.enqueue({"status": 503}, {"status": 503})
    client = make_client(runner("broken", server.base_url), runner("local", dead))
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    err = info.value
    assert err.kind == "connection"
    assert err.runner == "local"
    assert [a.kind for a in err.attempts] == ["server"]
    assert err.user_message() == (
        f"The model server 'local' ({dead}) is not reachable: connection refused (1 other server also failed)."
    )
    assert "Traceback" not in str(err)


def test_connection_refused_message_names_endpoint():
    dead = closed_port_url()
    with pytest.raises(LLMError) as info:
        make_client(runner("local", dead)).complete(MESSAGES)
    assert info.value.user_message() == f"The model server 'local' ({dead}) is not reachable: connection refused."


def test_429_retry_after_is_honoured_on_the_same_runner(server, server2):
    server.enqueue({"status": 429, "headers": {"Retry-After": "2"}}, "after the wait")
    sleeps: list[float] = []
    client = make_client(runner("a", server.base_url), runner("b", server2.base_url), sleeps=sleeps)
    result = client.complete(MESSAGES)
    assert result.runner == "a"
    assert result.text == "after the wait"
    assert sleeps == [2.0]
    assert server2.chat_requests == []


def test_retry_after_is_capped_and_retries_are_bounded(server, server2):
    server.enqueue(*[{"status": 429, "headers": {"Retry-After": "999"}}] * 3)
    server2.enqueue("backup answer")
    sleeps: list[float] = []
    client = make_client(
        runner("a", server.base_url), runner("b", server2.base_url), sleeps=sleeps, retry_max_wait_seconds=30
    )
    assert client.complete(MESSAGES).runner == "b"
    assert sleeps == [30.0]
    assert len(server.chat_requests) == 2


def test_insufficient_quota_is_not_retried(server):
    body = {
        "error": {
            "message": "You exceeded your current quota.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    server.enqueue({"status": 429, "body": body, "headers": {"Retry-After": "1"}}, "never reached")
    sleeps: list[float] = []
    with pytest.raises(LLMError) as info:
        make_client(runner("paid", server.base_url), sleeps=sleeps).complete(MESSAGES)
    assert info.value.kind == "rate_limit"
    assert info.value.quota is True
    assert "quota" in info.value.user_message()
    assert sleeps == []
    assert len(server.chat_requests) == 1


def test_401_fails_at_once_without_trying_next_runner(server, server2):
    server.enqueue({"status": 401, "body": {"error": {"message": "Invalid token", "code": "invalid_api_key"}}})
    client = make_client(runner("a", server.base_url), runner("b", server2.base_url))
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    assert info.value.kind == "auth"
    assert info.value.status == 401
    assert server2.chat_requests == []
    assert len(server.chat_requests) == 1


def test_other_4xx_fails_at_once_as_client_error(server, server2):
    server.enqueue({"status": 400, "body": {"error": {"message": "unknown field 'foo'"}}})
    client = make_client(runner("a", server.base_url), runner("b", server2.base_url))
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    assert info.value.kind == "client"
    assert "unknown field 'foo'" in info.value.user_message()
    assert server2.chat_requests == []


@pytest.fixture
def stalled(server):
    """``server`` answers no chat request until the test is over (a timeout cannot race an answer)."""
    release = threading.Event()
    server.set_handler(lambda request: release.wait(30) and "too late")
    yield server
    release.set()


def test_timeout_moves_to_next_runner(stalled, server2):
    server2.enqueue("in time")
    client = make_client(runner("slow", stalled.base_url, timeout_seconds=0.2), runner("fast", server2.base_url))
    result = client.complete(MESSAGES)
    assert result.runner == "fast"
    assert result.text == "in time"
    assert len(stalled.chat_requests) == 1


def test_timeout_on_only_runner_is_timeout_kind(stalled):
    with pytest.raises(LLMError) as info:
        make_client(runner("slow", stalled.base_url, timeout_seconds=0.2)).complete(MESSAGES)
    assert info.value.kind == "timeout"
    assert "'slow'" in info.value.user_message() and "0.2 s" in info.value.user_message()


# ----- errors: context length, garbage, shapes ---------------------------------------------


@pytest.mark.parametrize(
    "status,body",
    [
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens.",
                    "code": "context_length_exceeded",
                }
            },
        ),
        (
            500,
            {
                "error": {
                    "code": 500,
                    "message": "the request exceeds the available context size",
                    "type": "exceed_context_size_error",
                }
            },
        ),
        (
            400,
            {
                "object": "error",
                "message": "However, you requested 9000 tokens; too many tokens",
                "type": "BadRequestError",
                "code": 400,
            },
        ),
        (413, "Prompt has too many tokens"),
        # llama.cpp before exceed_context_size_error: the wording alone says it (400, or 500 in some builds).
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size. try increasing the "
                    "context size or enable context shift",
                    "type": "invalid_request_error",
                }
            },
        ),
        (
            500,
            {
                "error": {
                    "code": 500,
                    "message": "the request exceeds the available context size. try increasing the "
                    "context size or enable context shift",
                    "type": "server_error",
                }
            },
        ),
        # vLLM's engine check.
        (
            400,
            {
                "object": "error",
                "message": "The decoder prompt (length 5000) is longer than the maximum model length of 4096.",
                "type": "BadRequestError",
                "code": 400,
            },
        ),
    ],
)
def test_context_length_error_is_distinct_and_not_failed_over(server, server2, status, body):
    server.enqueue({"status": status, "body": body}, "never")
    client = make_client(runner("a", server.base_url), runner("b", server2.base_url))
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    assert info.value.kind == "context_length"
    assert info.value.status == status
    assert len(server.chat_requests) == 1
    assert server2.chat_requests == []


@pytest.mark.parametrize(
    "reply",
    [
        {"raw": b"<html>502 Bad Gateway</html>", "content_type": "text/html"},
        {"raw": b"{not json"},
        {"raw": {"id": "x", "object": "chat.completion", "choices": []}},
        {"raw": [1, 2, 3]},
    ],
)
def test_garbage_or_empty_choices_is_bad_response_and_next_runner_is_tried(server, server2, reply):
    server.enqueue(reply)
    server2.enqueue("sane")
    client = make_client(runner("weird", server.base_url), runner("sane", server2.base_url))
    assert client.complete(MESSAGES).runner == "sane"
    server.enqueue(reply)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, runner="weird")
    assert info.value.kind == "bad_response"
    assert info.value.user_message().startswith("The model server 'weird' (")


@pytest.mark.parametrize(
    "body,expected",
    [
        ({"error": {"message": "model not found", "type": "not_found_error"}}, "model not found"),
        ({"error": "'response_format.type' must be 'json_schema' or 'text'"}, "must be 'json_schema' or 'text'"),
        ({"object": "error", "message": "bad sampling params", "code": 400}, "bad sampling params"),
        ("plain text failure", "plain text failure"),
    ],
)
def test_error_body_shapes_reach_the_user_message(server, body, expected):
    server.enqueue({"status": 404, "body": body})
    with pytest.raises(LLMError) as info:
        make_client(runner("local", server.base_url)).complete(MESSAGES)
    message = info.value.user_message()
    assert expected in message
    assert message.count(".") >= 1 and "\n" not in message


def test_parse_retry_after_pure():
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({}) is None


def test_parse_error_body_pure():
    assert parse_error_body('{"error": {"message": "m", "code": "c", "type": "t"}}') == ("m", "c t")
    assert parse_error_body('{"error": "flat"}') == ("flat", "")
    assert parse_error_body("<html>oops</html>") == ("<html>oops</html>", "")


# ----- request body ----------------------------------------------------------------


def test_extra_body_cannot_override_model_messages_stream_but_can_temperature(server, caplog):
    caplog.set_level(logging.WARNING)
    extra_body = {"model": "evil", "messages": [], "stream": True, "temperature": 0.9, "reasoning_effort": "low"}
    client = make_client(runner("local", server.base_url, extra_body=extra_body))
    warnings = [r for r in caplog.records if "'local'" in r.getMessage()]
    assert len(warnings) == 1
    client.complete(MESSAGES)
    client.complete(MESSAGES)
    assert len([r for r in caplog.records if "'local'" in r.getMessage() and "ignored" in r.getMessage()]) == 1
    req = server.chat_requests[0]
    assert req["model"] == "model-local"
    assert req["messages"] == MESSAGES
    assert "stream" not in req
    assert req["temperature"] == 0.9
    assert req["reasoning_effort"] == "low"


def test_null_temperature_and_max_tokens_are_omitted(server):
    client = make_client(runner("local", server.base_url), temperature=None, max_tokens=None)
    client.complete(MESSAGES)
    req = server.chat_requests[0]
    assert "temperature" not in req and "max_tokens" not in req


def test_extra_per_call_and_none_removes_a_field():
    client = make_client(
        runner("oa", "http://127.0.0.1:9/v1", extra_body={"max_tokens": None, "max_completion_tokens": 500})
    )
    body = client.build_request(
        client.runners[0], MESSAGES, extra={"response_format": {"type": "json_schema"}, "model": "x"}
    )
    assert body == {
        "model": "model-oa",
        "messages": MESSAGES,
        "temperature": 0.3,
        "max_completion_tokens": 500,
        "response_format": {"type": "json_schema"},
    }


def test_config_errors_name_the_problem():
    with pytest.raises(ValueError, match="runners"):
        LLMClient.from_section({})
    with pytest.raises(ValueError, match=r"llm\.runners\[0\]\.base_url: missing \(runner 'x'\)"):
        LLMClient.from_section({"runners": [{"name": "x", "model": "m"}]})
    client = make_client(runner("only", "http://127.0.0.1:9/v1"))
    with pytest.raises(ValueError, match="'nope'"):
        client.complete(MESSAGES, runner="nope")


# ----- usage and reasoning ------------------------------------------------------------


def test_parse_usage_openai_shape():
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 40,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 30},
    }
    assert parse_usage(usage) == Usage(100, 40, cached_tokens=64, reasoning_tokens=30)


def test_parse_usage_deepseek_shape():
    usage = {"completion_tokens": 5, "prompt_cache_hit_tokens": 70, "prompt_cache_miss_tokens": 30}
    assert parse_usage(usage) == Usage(prompt_tokens=100, completion_tokens=5, cached_tokens=70)


def test_parse_usage_anthropic_shape():
    usage = {"input_tokens": 12, "output_tokens": 7, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 900}
    assert parse_usage(usage) == Usage(12, 7, cached_tokens=0, cache_write_tokens=900)


def test_parse_usage_llama_cpp_timings():
    raw = {"timings": {"cache_n": 236, "prompt_n": 1, "predicted_n": 35}}
    assert parse_usage({"prompt_tokens": 237, "completion_tokens": 35}, raw) == Usage(237, 35, cached_tokens=236)


def test_parse_usage_basic_only_leaves_the_rest_none():
    result = parse_usage({"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11})
    assert result == Usage(9, 2)
    assert result.cached_tokens is None and result.reasoning_tokens is None
    assert result.as_dict() == {"prompt_tokens": 9, "completion_tokens": 2}
    assert parse_usage(None) == Usage()


def test_usage_shapes_over_the_wire(server):
    server.enqueue(
        {
            "content": "a",
            "usage": {
                "prompt_tokens": 10,
                "completion_tokens": 1,
                "prompt_cache_hit_tokens": 6,
                "prompt_cache_miss_tokens": 4,
            },
        }
    )
    server.enqueue({"content": "b", "usage": {"prompt_tokens": 50, "completion_tokens": 2}, "timings": {"cache_n": 48}})
    client = make_client(runner("local", server.base_url))
    assert client.complete(MESSAGES).usage.cached_tokens == 6
    assert client.complete(MESSAGES).usage.cached_tokens == 48


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_field_is_returned_separately(server, field):
    server.enqueue({"content": "The answer is 4.", "reasoning": "2+2", "reasoning_field": field})
    result = make_client(runner("local", server.base_url)).complete(MESSAGES)
    assert result.text == "The answer is 4."
    assert result.reasoning == "2+2"


def test_think_block_is_split_off(server):
    server.enqueue("<think>\nLet me count.\n</think>\n\nThree.")
    result = make_client(runner("local", server.base_url)).complete(MESSAGES)
    assert result.text == "Three."
    assert result.reasoning == "Let me count."


def test_think_helpers_pure():
    assert split_think("no think here") == ("no think here", None)
    assert split_think("<think>a</think>b") == ("b", "a")
    assert visible_stream_text("<thi") is None
    assert visible_stream_text("<think>plan") is None
    assert visible_stream_text("<think>plan</think>Hi") == "Hi"
    assert visible_stream_text("Hello <think>") == "Hello <think>"


@pytest.mark.parametrize(
    "content",
    [
        "  <think>plan it</thi" + "nk>\n\n Hello there",
        "<thi",
        "<think>never closed",
        "Hello <think> there",
        "\n<think></think>",
    ],
)
@pytest.mark.parametrize("step", [1, 2, 5])
def test_the_visible_part_of_a_growing_stream_is_what_the_whole_text_shows(content, step):
    """The reader keeps where `</think>` was found instead of searching the reasoning again at every delta; what
    it shows at each point is what the text so far shows checked whole."""
    visible = VisibleStream()
    for end in [*range(step, len(content), step), len(content)]:
        assert visible.feed(content[:end]) == visible_stream_text(content[:end]), content[:end]


def test_sse_parser_skips_comments_and_stops_at_done():
    done = [False]
    lines = [": OPENROUTER PROCESSING", "", "event: message", 'data: {"a": 1}', "data: [DONE]", 'data: {"b": 2}']
    assert list(iter_sse_data(lines, done)) == ['{"a": 1}']
    assert done == [True]


# ----- secrets -------------------------------------------------------------------------


def test_api_key_is_sent_but_never_shown():
    with FakeChatServer(api_key=SECRET) as fake:
        good = make_client(runner("hosted", fake.base_url, api_key=SECRET))
        assert good.complete(MESSAGES).text == DEFAULT_REPLY
        assert fake.chat_requests[0].headers["Authorization"] == f"Bearer {SECRET}"
        echo = {"error": {"message": f"Incorrect API key provided: {SECRET}", "code": "invalid_api_key"}}
        fake.enqueue({"status": 401, "body": echo})
        with pytest.raises(LLMError) as info:
            good.complete(MESSAGES)
        err = info.value
        assert err.kind == "auth"
        for text in (err.user_message(), str(err), repr(err), repr(good.runners[0]), err.detail):
            assert SECRET not in text
            assert SECRET[:12] not in text
        wrong = make_client(runner("hosted", fake.base_url, api_key="sk-wrong-key-000000000"))
        with pytest.raises(LLMError) as info:
            wrong.complete(MESSAGES)
        assert "sk-wrong-key-000000000" not in info.value.user_message()
        assert info.value.user_message().startswith(f"The model server 'hosted' ({fake.base_url}) rejected the API key")


def test_api_key_from_environment(server, monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", SECRET)
    client = LLMClient.from_section(
        {"runners": [{"name": "env", "base_url": server.base_url, "model": "m", "api_key_env": "TEST_LLM_KEY"}]}
    )
    client.complete(MESSAGES)
    assert server.chat_requests[0].headers["Authorization"] == f"Bearer {SECRET}"


# ----- concurrency and ping -----------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 2])
def test_max_concurrency_bounds_calls_in_flight(server, limit):
    lock = threading.Lock()
    state = {"now": 0, "max": 0}
    release = threading.Event()

    def handler(request):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        release.wait(0.15)
        with lock:
            state["now"] -= 1
        return "done"

    server.set_handler(handler)
    client = make_client(runner("local", server.base_url), max_concurrency=limit)
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(client.complete(MESSAGES).text)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert results == ["done"] * 4
    assert state["max"] == limit


def test_ping_reports_reachability_and_never_raises(server):
    dead = closed_port_url()
    client = make_client(runner("up", server.base_url), runner("down", dead))
    ok, message = client.ping("up")
    assert ok and "'up'" in message
    assert server.requests[-1].path == "/v1/models"
    ok, message = client.ping("down")
    assert not ok and "not reachable" in message
    assert client.ping()[0] is True
    assert client.ping("missing")[0] is False
    client.close()


# ----- the fake server's other endpoints (shared by other tests) -----------------------------


def test_fake_embeddings_are_deterministic_and_word_sensitive(server):
    response = requests.post(
        f"{server.base_url}/embeddings",
        json={"model": "e", "input": ["red apple", "red apple pie", "stock market"]},
        timeout=5,
    )
    vectors = [d["embedding"] for d in response.json()["data"]]
    assert vectors[0] == hash_embedding("red apple")
    assert math.isclose(sum(v * v for v in vectors[0]), 1.0)

    def cos(a, b):
        return sum(x * y for x, y in zip(a, b, strict=False))

    assert cos(vectors[0], vectors[1]) > cos(vectors[0], vectors[2])
    server.set_embeddings_handler(lambda texts: {"status": 500})
    assert requests.post(f"{server.base_url}/embeddings", json={"input": "x"}, timeout=5).status_code == 500


def test_fake_transcription_and_models(server):
    server.set_transcription("buy milk")
    response = requests.post(
        f"{server.base_url}/audio/transcriptions",
        files={"file": ("voice.oga", b"OggS-bytes", "audio/ogg")},
        data={"model": "whisper-1"},
        timeout=5,
    )
    assert response.json() == {"text": "buy milk"}
    recorded = server.requests[-1]
    assert recorded["model"] == "whisper-1"
    assert recorded["file_name"] == "voice.oga" and recorded["file_size"] == 10
    models = requests.get(f"{server.base_url}/models", timeout=5).json()
    assert [m["id"] for m in models["data"]] == ["fake-model"]


def test_fake_server_stop_refuses_later_connections():
    fake = FakeChatServer().start()
    client = make_client(runner("local", fake.base_url))
    client.complete(MESSAGES)
    assert fake.wait_for_requests(1, timeout=1, path="/chat/completions")
    fake.stop()
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES)
    assert info.value.kind == "connection"


def test_runner_config_defaults():
    r = RunnerConfig(name="n", base_url="http://h/v1", model="m")
    assert (r.api_key, r.extra_body, r.timeout_seconds) == ("", {}, 120)
