"""Telegram end to end: the real bot polling FakeBotAPI, answered by FakeChatServer."""

from __future__ import annotations

import threading

import pytest

from tests.telegram_harness import (
    OWNER,
    STRANGER,
    RunningBot,
    busy_queue,
    make_runtime,  # noqa: F401
    pairing_off,
    snapshot,
    telegram_config,
    texts,
)

#: The flood wait the fake asks for: Telegram's are whole seconds; the bot waits out whatever it is told.
FLOOD_WAIT = 0.05


@pytest.fixture
def bot(fake, bot_config, workspace, tmp_path):
    runtime = make_runtime(telegram_config(bot_config, fake), workspace, tmp_path)
    with RunningBot(runtime) as running:
        yield running


def test_hello_round_trip(fake, bot, chat_server, monkeypatch):
    from messaging_llm_bot.conversation import progress as progress_mod

    # "typing…" after 20 ms instead of the product's 0.3 s; the model answers once the chat shows it (it was a
    # fixed 0.5 s delay): a grace it only waits out is no part of this test (test_telegram_progress.py has it).
    monkeypatch.setattr(progress_mod, "TYPING_GRACE_SECONDS", 0.02)

    def slow_model(request: dict) -> str:
        fake.wait_for(lambda: fake.calls("sendChatAction"), timeout=30)
        return '{"reply": "Hello **there**!"}'

    chat_server.set_handler(slow_model)
    fake.send_message("hello")
    msgs = fake.wait_for_messages(OWNER, 1)
    assert msgs[0]["text"] == "Hello there!"
    assert {"type": "bold", "offset": 6, "length": 5} in msgs[0]["entities"]
    assert chat_server.chat_requests[-1]["messages"][-1]["content"].startswith("hello")
    assert fake.calls("sendChatAction")
    assert [c["command"] for c in fake.commands()][:2] == ["help", "now"]


def test_the_reply_footer_reaches_the_chat_in_italics(fake, start_bot, chat_server):
    # The reply text is the agent's reply_text (the same in every frontend): reply, blank line, footer.
    start_bot(config_patch=lambda config: config["runtime"].update(reply_footer=True))
    chat_server.enqueue('{"reply": "Hi."}')
    fake.send_message("hello")
    [msg] = fake.wait_for_messages(OWNER, 1)
    assert msg["text"].startswith("Hi.\n\n— ") and " 1 round · " in msg["text"]
    footer = msg["text"].index("— ")
    assert {"type": "italic", "offset": footer, "length": len(msg["text"]) - footer} in msg["entities"]


def test_stranger_is_refused_without_model_call_or_workspace_change(fake, start_bot, chat_server, workspace):
    start_bot(config_patch=pairing_off)
    before = snapshot(workspace)
    fake.send_message("hello, let me in", user_id=STRANGER, username="stranger")
    for n in range(20):  # told once; the rest of a flood spends none of the replies' send budget
        fake.send_message(f"/status {n}", user_id=STRANGER, username="stranger")
    msgs = fake.wait_for_messages(STRANGER, 1)
    assert f"Your user id is {STRANGER}" in msgs[0]["text"]
    assert snapshot(workspace) == before  # nothing written, not even the inbox
    assert chat_server.requests == []
    fake.send_message("ping", user_id=OWNER)  # the owner still gets answers afterwards
    fake.wait_for_messages(OWNER, 1)
    assert len(chat_server.chat_requests) == 1
    assert len(fake.messages(STRANGER)) == 1  # every stranger update came before the owner's, in one poll or more


def test_empty_allowlist_serves_no_one(fake, start_bot, chat_server, caplog):
    caplog.set_level("INFO")
    start_bot(config_patch=pairing_off, allowed_user_ids=[])
    fake.send_message("hi")
    msgs = fake.wait_for_messages(OWNER, 1)
    assert "not authorised" in msgs[0]["text"] and "Your user id is 1" in msgs[0]["text"]
    assert chat_server.chat_requests == []
    assert any("allowed_user_ids is empty" in r.getMessage() for r in caplog.records)
    assert any("Serving @testbot for user ids []" in r.getMessage() for r in caplog.records)


def test_group_answers_only_when_mentioned_or_replied_to(fake, start_bot, chat_server):
    start_bot()
    group = -100
    chat_server.set_handler(lambda req: '{"reply": "answer ' + str(len(chat_server.chat_requests)) + '"}')
    fake.send_message("just chatting", chat_id=group, chat_type="supergroup")
    fake.send_message(
        "@testbot what time is it?",
        chat_id=group,
        chat_type="supergroup",
        entities=[{"type": "mention", "offset": 0, "length": 8}],
    )
    first = fake.wait_for_messages(group, 1)
    fake.send_message("and tomorrow?", chat_id=group, chat_type="supergroup", reply_to=first[0]["message_id"])
    fake.send_message("/help@testbot", chat_id=group, chat_type="supergroup")
    fake.send_message("/help@otherbot", chat_id=group, chat_type="supergroup")
    msgs = fake.wait_for_messages(group, 3)
    assert len(chat_server.chat_requests) == 2
    asked = [r["messages"][-1]["content"] for r in chat_server.chat_requests]
    assert asked[0].startswith("what time is it?") and asked[1].startswith("and tomorrow?")
    assert "Commands" in msgs[2]["text"]
    assert len(fake.messages(group)) == 3


def test_group_mode_all_answers_everything(fake, start_bot, chat_server):
    start_bot(group_mode="all")
    fake.send_message("just chatting", chat_id=-5, chat_type="group")
    fake.wait_for_messages(-5, 1)
    assert len(chat_server.chat_requests) == 1


def test_long_reply_is_split_on_boundaries_in_order(fake, start_bot, chat_server):
    start_bot()
    paragraphs = [f"Paragraph {i}: " + " ".join(f"word{i}x{j}" for j in range(60)) for i in range(20)]
    reply = "\n\n".join(paragraphs)
    assert len(reply) > 10_000
    chat_server.enqueue({"content": '{"reply": ' + __import__("json").dumps(reply) + "}"})
    fake.send_message("write a lot")
    fake.wait_for(lambda: sum(len(t) for t in texts(fake)) >= len(reply) - 100)
    parts = texts(fake)
    assert len(parts) >= 3 and all(len(p) <= 4096 for p in parts)
    assert all(p.startswith("Paragraph") for p in parts)  # cut between paragraphs, not inside words
    assert "\n\n".join(parts) == reply


def test_formatting_rejected_by_telegram_is_resent_plain(fake, start_bot, chat_server):
    start_bot()
    chat_server.enqueue('{"reply": "**bold** and `code`"}')
    fake.fail_next("sendMessage", status=400, description="Bad Request: can't parse entities: unsupported")
    fake.send_message("format please")
    msgs = fake.wait_for_messages(OWNER, 1)
    assert msgs[0]["text"] == "bold and code"
    sends = fake.calls("sendMessage")
    assert sends[0]["status"] == 400 and sends[-1]["status"] == 200
    assert not sends[-1]["params"].get("entities")


def test_flood_wait_on_send_is_waited_out(fake, start_bot, chat_server):
    start_bot()
    chat_server.enqueue('{"reply": "after the flood"}')
    fake.fail_next("sendMessage", status=429, retry_after=FLOOD_WAIT)  # Telegram says whole seconds: a short one
    fake.send_message("hi")
    msgs = fake.wait_for_messages(OWNER, 1)
    assert msgs[0]["text"] == "after the flood"
    calls = fake.calls("sendMessage")
    assert calls[0]["status"] == 429 and calls[-1]["status"] == 200
    assert calls[1]["at"] - calls[0]["at"] >= FLOOD_WAIT  # the wait it was told, not a retry at once


def test_edited_message_is_not_answered_again(fake, start_bot, chat_server):
    start_bot()
    update = fake.send_message("hello")
    fake.wait_for_messages(OWNER, 1)
    fake.edit_message(OWNER, update["message"]["message_id"], "hello again")
    fake.send_message("next")
    fake.wait_for_messages(OWNER, 2)
    assert [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests] == ["hello", "next"]
    # A command edited into another is no second command either (edits are not even fetched: ALLOWED_UPDATES).
    command = fake.send_message("/help")
    fake.wait_for_messages(OWNER, 3)
    fake.edit_message(OWNER, command["message"]["message_id"], "/status")
    fake.send_message("/why")
    replies = [m["text"] for m in fake.wait_for_messages(OWNER, 4)]
    assert "Commands" in replies[2] and "No memories were recalled" in replies[3], replies
    assert len(chat_server.chat_requests) == 2


def test_one_chat_in_order_while_other_chats_run_concurrently(fake, start_bot, chat_server):
    start_bot(config_patch=busy_queue, allowed_user_ids=[1, 2])  # the queue's order (steer: test_busy_modes.py)

    release = threading.Event()  # the model holds chat 1's first answer until chat 2 was answered

    def handler(req):
        text = req["messages"][-1]["content"].split("\n")[0]
        if text == "first":
            release.wait(15)
        return {"content": '{"reply": "re: ' + text + '"}'}

    chat_server.set_handler(handler)
    fake.send_message("first", user_id=1)
    fake.send_message("second", user_id=1)
    fake.send_message("other chat", user_id=2)
    try:
        other = fake.wait_for_messages(2, 1)
        assert other[0]["text"] == "re: other chat"
        assert len(fake.messages(1)) == 0  # the slow first message in chat 1 did not block chat 2
    finally:
        release.set()
    fake.wait_for_messages(1, 2)
    assert texts(fake, 1) == ["re: first", "re: second"]
