"""The Telegram allowlist in a group chat (issue 34.12: the neighbouring chat type of the private-chat
tests in test_security.py and test_telegram_basic.py): a stranger who shares a group with the owner
presses the owner's buttons and sends commands there, and nothing runs; an empty allowlist serves
no one in a group either. The real bot against the fake Bot API, a scripted model server."""

from __future__ import annotations

import json

from tests.telegram_harness import OWNER, STRANGER, all_bot_texts, pairing_off

GROUP = -100777
IN_GROUP = {"chat_id": GROUP, "chat_type": "supergroup"}
OWNER_SECRET = "owner-secret-code-4711"


def test_a_stranger_pressing_the_owners_reset_button_in_a_group_clears_nothing(fake, start_bot, chat_server):
    chat_server.set_handler(lambda req: '{"reply": "noted"}')
    start_bot(group_mode="all")
    fake.send_message("remember the milk", user_id=OWNER, **IN_GROUP)
    fake.wait_for_messages(GROUP, 1)
    fake.send_message("/reset", user_id=OWNER, **IN_GROUP)
    question = fake.wait_for_messages(GROUP, 2)[1]
    assert question["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "reset:yes"
    fake.callback_query(STRANGER, "reset:yes", question["message_id"], chat_id=GROUP)
    answered = fake.wait_for(lambda: fake.calls("answerCallbackQuery"))
    assert "not authorised" in answered[0]["params"].get("text", "")
    fake.send_message("what did I say?", user_id=OWNER, **IN_GROUP)
    fake.wait_for_messages(GROUP, 3)
    history = json.dumps(chat_server.chat_requests[-1]["messages"])
    assert "remember the milk" in history  # the stranger's press cleared nothing
    assert not any("Cleared" in text for text in all_bot_texts(fake))


def test_a_strangers_commands_in_a_group_run_nothing(fake, start_bot, chat_server, workspace):
    from assistant_framework.stores.tasks import TaskStore

    TaskStore(workspace).add(f"pay the {OWNER_SECRET} invoice", due="2020-01-01")
    bot = start_bot(group_mode="all")
    config_before = bot.runtime.config
    for command in ["/now@testbot", "/status", "/reload", "/stats", "/why"]:
        fake.send_message(command, user_id=STRANGER, **IN_GROUP)
    fake.send_message("what is on the owner's list?", user_id=STRANGER, **IN_GROUP)
    fake.send_message("/help", user_id=OWNER, **IN_GROUP)  # after the stranger's updates

    def shown(words: str) -> bool:
        return any(words in m["text"] for m in fake.messages(GROUP))

    # The refusal takes no place in the chat's queue: it may come after the owner's answer (nothing else may).
    fake.wait_for(lambda: shown("Commands") and shown("not authorised"))
    refusals = [m["text"] for m in fake.messages(GROUP) if "Commands" not in m["text"]]
    assert refusals and all("not authorised" in text and str(STRANGER) in text for text in refusals), refusals
    assert OWNER_SECRET not in json.dumps(all_bot_texts(fake))
    assert chat_server.requests == [] and bot.runtime.config is config_before
    assert not list(workspace.root.glob("state/inbox/pending/*"))  # nothing of the stranger's was stored


def test_an_empty_allowlist_serves_no_one_in_a_group(fake, start_bot, chat_server, workspace):
    start_bot(config_patch=pairing_off, allowed_user_ids=[], group_mode="all")
    fake.send_message("hello everyone", user_id=OWNER, **IN_GROUP)
    fake.send_message("/now", user_id=OWNER, **IN_GROUP)
    fake.send_message("/help", user_id=STRANGER)  # after the group's updates (another user: told once too)
    # Two chats are answered concurrently: the stranger's refusal may come before the group's.
    fake.wait_for(lambda: fake.messages(GROUP) and fake.messages(STRANGER), timeout=20)
    refusals = [m["text"] for m in fake.messages(GROUP) + fake.messages(STRANGER)]
    assert len(refusals) == 2 and all("not authorised" in text for text in refusals), refusals
    assert chat_server.requests == []
    assert not list(workspace.root.glob("conversations/*"))


def test_a_message_without_a_sender_is_answered_by_nothing(fake, start_bot, chat_server, workspace):
    """The Bot API's ``from`` is optional ("may be empty for messages sent to channels"): a message that names
    no user is no allowed user's, so the gate stops it like a stranger's (deny by default), with no refusal
    (there is no one to tell) and nothing stored, even where every group message is for the bot."""
    chat_server.set_handler(lambda req: '{"reply": "noted"}')
    start_bot(group_mode="all")
    group = {"id": GROUP, "type": "supergroup", "title": "Family"}
    for number, text in enumerate(("what is on the owner's list?", "/help"), start=1):
        message = {"message_id": number, "date": 1767225600, "chat": group, "sender_chat": group, "text": text}
        if text.startswith("/"):
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text)}]
        fake.push_update({"message": message})
    fake.send_message("and now me", user_id=OWNER)  # after the userless ones: the owner's own chat
    fake.wait_for_messages(OWNER, 1)
    assert fake.messages(GROUP) == [] and len(chat_server.requests) == 1
    assert "owner's list" not in json.dumps(chat_server.chat_requests[0]["messages"])
