"""Owner-only commands in their neighbouring modes (issue 34.4, 34.5): a friend's command in any
spelling python-telegram-bot or the Signal frontend accepts (``/NOW``, ``/Stats``, ``/now@Bot``,
``/now!``), and the owner's own commands and turns in a group chat, are refused with no owner data
shown. Real bots (PTB against the fake Bot API, the Signal frontend against the fake daemon), a
scripted model, real workspace files."""

from __future__ import annotations

import json

from tests.signal_harness import BOT, GROUP
from tests.signal_harness import FRIEND as SIGNAL_FRIEND
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.telegram_harness import OWNER, all_bot_texts

FRIEND = 42
GROUP_CHAT = -100200300
OWNER_SECRET = "owner-secret-code-4711"

#: Every spelling of an owner-only command a chat client may send; Telegram's bot_command entity
#: ends at the first character a command name cannot hold (``/now!`` runs ``/now``).
SPELLINGS = [
    "/now",
    "/NOW",
    "/Now",
    "/Stats",
    "/STATS",
    "/Reload",
    "/RELOAD",
    "/now@testbot",
    "/NOW@TestBot",
    "/now!",
    "/stats.",
    "/now@testbot,please",
    "/reload, please",
    "/Model small",
    "/model@testbot default",
]


def owner_data(workspace) -> None:
    """Owner data that /now shows (a task due today) and that a model turn could read."""
    from assistant_framework.stores.tasks import TaskStore

    TaskStore(workspace).add(f"pay the {OWNER_SECRET} invoice", due="2020-01-01")
    workspace.write_text("notes/private.md", f"# Private\n{OWNER_SECRET}\n")
    workspace.write_text("context/me.md", f"The owner's PIN is {OWNER_SECRET}.\n")


def model_saw(chat_server) -> str:
    return json.dumps([r["messages"] for r in chat_server.chat_requests], ensure_ascii=False)


def assert_all_refused(replies: list[str], count: int) -> None:
    assert len(replies) == count, replies
    for reply in replies:
        assert "only for the owner" in reply and OWNER_SECRET not in reply, reply


# -- Telegram ---------------------------------------------------------------------------------------


def test_telegram_friend_commands_in_every_spelling_are_refused(fake, start_bot, chat_server, workspace):
    owner_data(workspace)
    bot = start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER)
    config_before = bot.runtime.config
    for n, command in enumerate(SPELLINGS, 1):
        fake.send_message(command, user_id=FRIEND)
        fake.wait_for_messages(FRIEND, n)
    assert_all_refused([m["text"] for m in fake.messages(FRIEND)], len(SPELLINGS))
    assert OWNER_SECRET not in json.dumps(all_bot_texts(fake))
    assert chat_server.requests == [] and bot.runtime.config is config_before  # nothing reloaded
    # The owner's own private chat still runs them (the refusal above is about who, not how it is spelt).
    fake.send_message("/NOW", user_id=OWNER)
    assert OWNER_SECRET in fake.wait_for_messages(OWNER, 1)[0]["text"]


def test_telegram_owner_in_a_group_gets_no_owner_data(fake, start_bot, chat_server, workspace):
    owner_data(workspace)
    start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, group_mode="all")
    group = {"chat_id": GROUP_CHAT, "chat_type": "group"}
    commands = ["/now", "/NOW@testbot", "/stats", "/Reload", "/now!"]
    for n, command in enumerate(commands, 1):
        fake.send_message(command, user_id=OWNER, **group)
        fake.wait_for_messages(GROUP_CHAT, n)
    assert_all_refused([m["text"] for m in fake.messages(GROUP_CHAT)], len(commands))
    fake.send_message("/status", user_id=OWNER, **group)
    assert "Model:" not in fake.wait_for_messages(GROUP_CHAT, len(commands) + 1)[-1]["text"]
    # A model turn of the owner in the group is a guest turn: no owner context, notes or tasks.
    chat_server.enqueue(
        json.dumps({"skill": "file", "args": {"action": "read", "path": "notes/private.md"}}),
        '{"reply": "answered in the group"}',
    )
    fake.send_message("read my private note", user_id=OWNER, **group)
    fake.wait_for(lambda: any("answered in the group" in m["text"] for m in fake.messages(GROUP_CHAT)), timeout=15)
    assert OWNER_SECRET not in model_saw(chat_server)
    assert OWNER_SECRET not in json.dumps(all_bot_texts(fake))
    assert fake.messages(OWNER) == []  # nothing went to the owner's private chat either


# -- Signal -----------------------------------------------------------------------------------------


def signal_texts(daemon, target: str) -> list[str]:
    return [s["message"] for s in daemon.sent_to(target)]


def test_signal_friend_commands_in_every_spelling_are_refused(start, daemon, chat_server, workspace):
    owner_data(workspace)
    bot = start()
    config_before = bot.service.runtime.config
    spellings = [s.replace("testbot", BOT) for s in SPELLINGS if "!" not in s and "." not in s and "," not in s]
    for command in spellings:
        daemon.message(SIGNAL_FRIEND, command)
    daemon.wait_sent(len(spellings))
    assert_all_refused(signal_texts(daemon, SIGNAL_FRIEND), len(spellings))
    assert chat_server.requests == [] and bot.service.runtime.config is config_before
    daemon.message(SIGNAL_OWNER, "/NOW")
    daemon.wait_sent(len(spellings) + 1)
    assert OWNER_SECRET in signal_texts(daemon, SIGNAL_OWNER)[0]


def test_signal_owner_in_a_group_gets_no_owner_data(start, daemon, chat_server, workspace):
    owner_data(workspace)
    daemon.add_group(GROUP, "Family", [SIGNAL_OWNER, SIGNAL_FRIEND, BOT])
    start(group_mode="all")
    commands = ["/now", "/NOW", "/stats", "/Reload", f"/now@{BOT}"]
    for command in commands:
        daemon.message(SIGNAL_OWNER, command, group_id=GROUP)
    daemon.wait_sent(len(commands))
    assert_all_refused(signal_texts(daemon, GROUP), len(commands))
    daemon.message(SIGNAL_OWNER, "/status", group_id=GROUP)
    assert "Model:" not in daemon.wait_sent(len(commands) + 1)[-1]["message"]
    chat_server.enqueue(
        json.dumps({"skill": "file", "args": {"action": "read", "path": "notes/private.md"}}),
        '{"reply": "answered in the group"}',
    )
    daemon.message(SIGNAL_OWNER, "read my private note", group_id=GROUP)
    sent = daemon.wait_sent(len(commands) + 2)
    assert sent[-1]["message"] == "answered in the group" and sent[-1]["groupId"] == GROUP
    assert OWNER_SECRET not in model_saw(chat_server)
    assert all(OWNER_SECRET not in s["message"] for s in daemon.sent)
    assert daemon.sent_to(SIGNAL_OWNER) == []
