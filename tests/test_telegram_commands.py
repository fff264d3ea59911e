"""Telegram commands end to end (no model call for any of them)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from assistant_framework.stores.tasks import TaskStore
from tests.telegram_harness import OWNER, texts


def _ask(fake, text: str, n: int) -> str:
    fake.send_message(text)
    return fake.wait_for_messages(OWNER, n)[n - 1]["text"]


def test_every_command_answers_without_the_model(fake, start_bot, chat_server, workspace):
    start_bot()
    TaskStore(workspace).add("water plants", due=datetime.now().date() - timedelta(days=1))
    assert "/help" in _ask(fake, "/start", 1) and "/now" in texts(fake)[0]
    assert "Commands" in _ask(fake, "/help", 2)
    assert "save_note" in _ask(fake, "/skills", 3)
    assert "Test skill save_note" in _ask(fake, "/skill save_note", 4)
    assert "save_note" in _ask(fake, "/skill save_nite", 5) and "no skill named" in texts(fake)[4]
    assert "Model:" in _ask(fake, "/status", 6)
    now = _ask(fake, "/now", 7)
    assert "Now" in now and "water plants" in now
    assert "No model usage" in _ask(fake, "/stats", 8) or "Usage" in texts(fake)[7]
    assert "No memories were recalled" in _ask(fake, "/why", 9)
    assert "Unknown command /nope" in _ask(fake, "/nope", 10)
    # /status pings the model server (a models call), but nothing asks it for a chat completion
    assert chat_server.chat_requests == []
    assert [c["command"] for c in fake.commands()] == [
        c[0] for c in __import__("messaging_llm_bot.conversation.commands", fromlist=["COMMANDS"]).COMMANDS
    ]


def test_reset_says_what_is_cleared_then_clears_on_confirmation(fake, start_bot, chat_server, workspace):
    start_bot()
    fake.send_message("remember the milk")
    fake.wait_for_messages(OWNER, 1)
    question = _ask(fake, "/reset", 2)
    assert "clears the message history of this conversation" in question
    assert "kept" in question
    bot_msg = fake.messages(OWNER)[1]
    assert bot_msg["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "reset:yes"
    fake.callback_query(OWNER, "reset:yes", bot_msg["message_id"])
    fake.wait_for(lambda: "Cleared" in texts(fake)[1])
    assert "2 messages" in texts(fake)[1]
    fake.send_message("what did I say?")
    fake.wait_for_messages(OWNER, 3)
    history = [m["content"] for m in chat_server.chat_requests[-1]["messages"]]
    assert not any("remember the milk" in h for h in history)


def test_reload_refuses_an_invalid_config_and_keeps_running(fake, start_bot, chat_server, tmp_path):
    bot = start_bot()
    config_path = bot.runtime.config_path
    good = config_path.read_text()
    broken = json.loads(good)
    broken["runtime"]["timezone"] = 42  # schema error
    config_path.write_text(json.dumps(broken))
    reply = _ask(fake, "/reload", 1)
    assert reply.startswith("Reload refused") and "timezone" in reply
    config_path.write_text(good)
    assert _ask(fake, "/reload", 2).startswith("Reloaded")
    assert "ok" == _ask(fake, "still there?", 3)


def test_commands_for_another_bot_in_a_group_get_no_answer(fake, start_bot, chat_server):
    """``/cmd@otherbot`` in a group is for that bot: no refusal to a stranger, no "owner only" notice."""
    start_bot(allowed_user_ids=[OWNER, 2])
    group = -100
    fake.send_message("/help@otherbot", user_id=666, chat_id=group, chat_type="supergroup", username="stranger")
    fake.send_message("/now@otherbot", user_id=2, chat_id=group, chat_type="supergroup", username="friend")
    fake.send_message("/stats@OtherBot", chat_id=group, chat_type="supergroup")
    fake.send_message("/help@testbot", chat_id=group, chat_type="supergroup")  # ours: answered, after the others
    fake.wait_for(lambda: any("Commands" in t for t in texts(fake, group)))
    assert len(texts(fake, group)) == 1, texts(fake, group)
    # Still refused when addressed to this bot (or to no bot in particular).
    fake.send_message("/now@TestBot", user_id=2, chat_id=group, chat_type="supergroup", username="friend")
    fake.send_message("/help", user_id=666, chat_id=group, chat_type="supergroup", username="stranger")
    msgs = fake.wait_for_messages(group, 3)
    # Two people's commands: the stranger's refusal (at the gate) may come before the friend's answer.
    later = sorted(m["text"] for m in msgs[1:])
    assert "only for the owner" in later[0] and "not authorised" in later[1], later
    assert chat_server.chat_requests == []
