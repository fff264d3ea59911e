"""Faults answered clearly, end to end through Telegram: the model server down, slow, failing or
answering nonsense; Telegram failing while sending; nothing crashes and the next message works."""

from __future__ import annotations

import json
import logging

import pytest

from assistant_framework.inbox import Inbox
from tests.fakes.chat_server import FakeChatServer
from tests.telegram_harness import OWNER, texts

OK = '{"reply": "fine now"}'


def ask(fake, text: str, n: int) -> str:
    """The owner writes ``text``; returns the bot's n-th live message once it is there."""
    fake.send_message(text, user_id=OWNER)
    return fake.wait_for_messages(OWNER, n, timeout=20)[n - 1]["text"]


def then_next_message_works(fake, chat_server, n: int) -> None:
    chat_server.enqueue(OK)
    assert ask(fake, "and now?", n) == "fine now"
    assert len(texts(fake)) == n


@pytest.mark.parametrize(
    "fault, words",
    [
        ({"status": 500}, "internal error"),
        ({"status": 502, "body": "<html>bad gateway</html>"}, "internal error"),
        ({"status": 429, "headers": {"Retry-After": "0"}}, "rate-limiting"),
        ({"raw": "this is {not json", "content_type": "application/json"}, "could not be read"),
        ({"raw": {"id": "x", "object": "chat.completion", "choices": []}}, "could not be read"),
    ],
)
def test_model_fault_gives_one_specific_message_and_the_next_one_works(fake, start_bot, chat_server, fault, words):
    start_bot()
    chat_server.enqueue(*[fault] * 3)  # enough for any retry the client makes
    reply = ask(fake, "hello?", 1)
    assert words in reply and "model server" in reply.lower()
    assert len(reply) < 400 and "Traceback" not in reply
    fake.wait_for(lambda: len(chat_server.chat_requests) >= 1)
    chat_server.reset()
    then_next_message_works(fake, chat_server, 2)


def test_model_endpoint_down(fake, start_bot, bot_config):
    dead = FakeChatServer().start()
    url = dead.base_url
    dead.stop()  # nothing listens on that port any more

    def point_at_dead(config):
        config["llm"]["runners"][0]["base_url"] = url

    start_bot(config_patch=point_at_dead)
    reply = ask(fake, "anyone there?", 1)
    assert "not reachable" in reply and url in reply
    assert len(texts(fake)) == 1


def test_model_too_slow_times_out_and_the_next_message_works(fake, start_bot, chat_server):
    def short_timeout(config):
        config["llm"]["runners"][0]["timeout_seconds"] = 1

    start_bot(config_patch=short_timeout)
    chat_server.enqueue({"content": OK, "delay": 3})
    reply = ask(fake, "slow one", 1)
    assert "timed out" in reply
    then_next_message_works(fake, chat_server, 2)


CONTEXT_ERROR = {
    "status": 400,
    "body": {
        "error": {
            "message": "This model's maximum context length is 4096 tokens. However, your messages resulted in 9000 "
            "tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    },
}


def test_context_length_error_retries_once_with_trimmed_history(fake, start_bot, chat_server):
    start_bot()
    for i in range(3):
        chat_server.enqueue(f'{{"reply": "answer {i}"}}')
        ask(fake, f"question {i}", i + 1)
    chat_server.enqueue(CONTEXT_ERROR, '{"reply": "short enough now"}')
    assert ask(fake, "one more", 4) == "short enough now"
    first, retry = chat_server.chat_requests[-2:]
    assert len(retry["messages"]) < len(first["messages"])
    # If even the trimmed request is too long, the user is told so in one sentence.
    chat_server.enqueue(CONTEXT_ERROR, CONTEXT_ERROR)
    assert "too long" in ask(fake, "and another", 5)
    then_next_message_works(fake, chat_server, 6)


def test_telegram_5xx_while_sending_is_retried(fake, start_bot, chat_server):
    start_bot(progress=False)
    fake.fail_next("sendMessage", status=502, times=2)
    chat_server.enqueue('{"reply": "arrived anyway"}')
    fake.send_message("hi", user_id=OWNER)
    assert fake.wait_for_messages(OWNER, 1)[0]["text"] == "arrived anyway"
    # The fake shows a sent message before it records the call that sent it: wait for the record.
    calls = fake.wait_for(lambda: (lambda c: c if len(c) >= 3 else None)(fake.calls("sendMessage")), timeout=10)
    assert [c["status"] for c in calls] == [502, 502, 200]
    # Tried again after 0.25 s, then 0.5 s (the default's doubling: send.BACKOFF_BASE_SECONDS).
    assert calls[1]["at"] - calls[0]["at"] >= 0.25 and calls[2]["at"] - calls[1]["at"] >= 0.5


def test_undeliverable_reply_is_logged_with_its_message_and_kept_for_the_next_start(
    fake, start_bot, chat_server, workspace, caplog, short_send_backoff
):
    bot = start_bot(progress=False)
    fake.fail_next("sendMessage", status=502, times=4)  # every retry of the send fails
    chat_server.enqueue('{"reply": "you will get this later"}')
    with caplog.at_level(logging.ERROR, logger="messaging_llm_bot"):
        fake.send_message("important question", user_id=OWNER)
        fake.wait_for(lambda: len(fake.calls("sendMessage")) >= 4, timeout=20)
        fake.wait_for(lambda: any("not delivered" in r.getMessage() for r in caplog.records))
    line = next(r.getMessage() for r in caplog.records if "not delivered" in r.getMessage())
    assert "important question" in line and "resent at the next start" in line
    bot.stop()
    assert [i.reply for i in Inbox(workspace).pending()] == ["you will get this later"]
    start_bot(progress=False)
    assert fake.wait_for_messages(OWNER, 1)[0]["text"] == "you will get this later"
    assert len(chat_server.chat_requests) == 1  # resent from the ledger, the model is not asked again
    fake.wait_for(lambda: not Inbox(workspace).pending())


def test_telegram_flood_wait_on_every_part_of_a_long_reply(fake, start_bot, chat_server):
    start_bot(progress=False)
    long_reply = "\n\n".join(f"Part {i} " + "word " * 700 for i in range(3))
    chat_server.enqueue(json.dumps({"reply": long_reply}))
    fake.fail_next("sendMessage", status=429, retry_after=0)
    fake.send_message("long please", user_id=OWNER)
    messages = fake.wait_for_messages(OWNER, 3, timeout=20)
    assert [m["text"].split()[:2] for m in messages] == [["Part", "0"], ["Part", "1"], ["Part", "2"]]


def test_failing_skill_is_contained_and_reported_to_the_model(fake, start_bot, chat_server):
    start_bot(progress=False)
    chat_server.enqueue('{"skill": "boom", "args": {}}', '{"reply": "The boom skill failed: kaput."}')
    assert ask(fake, "press the button", 1) == "The boom skill failed: kaput."
    fed_back = chat_server.chat_requests[1]["messages"][-1]["content"]
    assert "boom" in fed_back and "kaput" in fed_back
    then_next_message_works(fake, chat_server, 2)
