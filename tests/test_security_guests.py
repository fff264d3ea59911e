"""Allowed users who are not the owner (issue 14.5): their own chat's history and memory, nothing of
the owner's. Real bot (PTB against the fake Bot API), scripted model, real workspace files."""

from __future__ import annotations

import asyncio
import json

import pytest

from assistant_framework.access import guest_area
from assistant_framework.stores.tasks import TaskStore
from tests.telegram_harness import OWNER, texts

FRIEND = 42
OWNER_SECRET = "owner-secret-code-4711"


def call(skill: str, **args) -> str:
    return json.dumps({"skill": skill, "args": args})


def owner_data(workspace) -> None:
    workspace.write_text("notes/private.md", f"# Private\n{OWNER_SECRET}\n")
    TaskStore(workspace).add(f"pay the {OWNER_SECRET} invoice", due="2020-01-01")
    workspace.write_text("context/me.md", f"The owner's PIN is {OWNER_SECRET}.\n")
    workspace.write_text("learnings/style.md", f"Sign with {OWNER_SECRET}.\n")
    workspace.write_text("conversations/tg:1/2026-01-01.jsonl", json.dumps({"text": OWNER_SECRET}) + "\n")


def friend_bot(start_bot):
    return start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER)


def model_saw(chat_server) -> str:
    return json.dumps([r["messages"] for r in chat_server.chat_requests], ensure_ascii=False)


def test_friend_file_skill_is_confined_to_their_own_area(fake, start_bot, chat_server, workspace):
    owner_data(workspace)
    friend_bot(start_bot)
    chat_server.enqueue(
        call("file", action="read", path="notes/private.md"),
        call("file", action="list"),
        call("file", action="write", path="notes/private.md", content="friend was here"),
        '{"reply": "done"}',
    )
    fake.send_message("read the owner's private note", user_id=FRIEND)
    fake.wait_for(lambda: any("done" in t for t in texts(fake, FRIEND)), timeout=15)
    seen = model_saw(chat_server)
    assert OWNER_SECRET not in seen  # not in the system prompt, not in any skill result
    assert "conversations/" not in seen.split("[This chat]")[-1]  # the listing shows no owner paths
    assert "notes/private.md" in seen and "Private" not in seen
    # The write landed in the friend's own area; the owner's note is untouched.
    assert workspace.read_text("notes/private.md") == f"# Private\n{OWNER_SECRET}\n"
    area = guest_area(f"tg:{FRIEND}")
    assert workspace.read_text(f"{area}/notes/private.md") == "friend was here"
    system = chat_server.chat_requests[0]["messages"][0]["content"]
    assert "[Tools]" in system and "- notes:" not in system and "- tasks:" not in system


@pytest.mark.parametrize(
    "skill,args",
    [
        ("notes", {"action": "list"}),
        ("tasks", {"action": "list"}),
        ("facts", {"action": "list"}),
        ("contacts", {"action": "list"}),
    ],
)
def test_friend_cannot_call_owner_data_skills(fake, start_bot, chat_server, workspace, skill, args):
    owner_data(workspace)
    friend_bot(start_bot)
    chat_server.enqueue(call(skill, **args), '{"reply": "answered"}')
    fake.send_message("what are the owner's things?", user_id=FRIEND)
    fake.wait_for(lambda: any("answered" in t for t in texts(fake, FRIEND)), timeout=15)
    feedback = chat_server.chat_requests[1]["messages"][-1]["content"]
    assert f"no skill named '{skill}' in this chat" in feedback
    assert OWNER_SECRET not in model_saw(chat_server)


@pytest.mark.parametrize("command", ["/now", "/reload", "/stats"])
def test_owner_only_commands_are_refused_to_a_friend(fake, start_bot, chat_server, workspace, command):
    owner_data(workspace)
    friend_bot(start_bot)
    fake.send_message(command, user_id=FRIEND)
    reply = fake.wait_for_messages(FRIEND, 1)[0]["text"]
    assert "only for the owner" in reply and OWNER_SECRET not in reply
    assert chat_server.requests == []


def test_status_details_only_for_the_owner_and_now_still_works_for_the_owner(fake, start_bot, chat_server, workspace):
    owner_data(workspace)
    friend_bot(start_bot)
    fake.send_message("/status", user_id=FRIEND)
    assert "Model:" not in fake.wait_for_messages(FRIEND, 1)[0]["text"]
    assert chat_server.requests == []  # not even the model ping
    fake.send_message("/now", user_id=OWNER)
    assert OWNER_SECRET in fake.wait_for_messages(OWNER, 1)[0]["text"]


def test_collector_notices_go_to_the_owner_only(fake, start_bot):
    bot = friend_bot(start_bot)
    # The collectors' callback path, waited for to the end (send_notice sends to its targets in turn).
    sent = asyncio.run_coroutine_threadsafe(
        bot.service.notices.send_notice(None, f"📬 mail: about {OWNER_SECRET}"), bot.service._loop
    )
    assert sent.result(10) is True
    assert any(OWNER_SECRET in t for t in texts(fake, OWNER))
    assert fake.messages(FRIEND) == []


def test_shared_command_dispatcher_applies_the_same_owner_rule(bot_config, workspace, tmp_path):
    """The frontend-neutral path (terminal chat today, Signal next) refuses the same commands."""
    from messaging_llm_bot.conversation.commands import GUEST_STATUS, run_command
    from messaging_llm_bot.conversation.markup import unescape_markdown
    from tests.telegram_harness import make_runtime

    owner_data(workspace)
    runtime = make_runtime(dict(bot_config, memory={"enabled": False}), workspace, tmp_path)
    try:
        for command in ("/now", "/reload", "/stats"):
            assert "only for the owner" in run_command(runtime, "signal:+4915", command, owner_data=False)
        assert run_command(runtime, "signal:+4915", "/status", owner_data=False) == GUEST_STATUS
        assert OWNER_SECRET in unescape_markdown(run_command(runtime, "signal:owner", "/now", owner_data=True))
    finally:
        runtime.shutdown(5)


def test_with_memory_on_a_friend_recalls_only_their_own_chat(fake, start_bot, chat_server, workspace):
    """Memory recall in a friend's chat searches that chat only: never the owner's notes, facts or
    other chats' logs, even when the friend asks about exactly those words."""
    owner_data(workspace)

    def memory_on(config):
        config["memory"] = {
            "enabled": True,
            "extract_facts": False,
            "episodes": False,
            "profile": False,
            "recall": {"enabled": True, "skip_recent_turns": 0},
        }

    start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, config_patch=memory_on)
    chat_server.enqueue(
        '{"reply": "Noted, the lighthouse is blue."}', '{"reply": "ok"}', '{"reply": "fine"}', '{"reply": "yours"}'
    )
    fake.send_message(f"the lighthouse code word is {OWNER_SECRET}", user_id=OWNER)
    fake.wait_for(lambda: any("Noted" in t for t in texts(fake, OWNER)), timeout=15)
    fake.send_message("my own lighthouse is red", user_id=FRIEND)
    fake.wait_for(lambda: any("ok" == t for t in texts(fake, FRIEND)), timeout=15)
    fake.send_message(
        "what do you know about the lighthouse, the invoice, the PIN and the private note?", user_id=FRIEND
    )
    fake.wait_for(lambda: any("fine" == t for t in texts(fake, FRIEND)), timeout=15)
    asked = json.dumps(chat_server.chat_requests[-1]["messages"], ensure_ascii=False)
    assert OWNER_SECRET not in asked  # not the owner's chat, note, task, context or learnings
    assert "my own lighthouse is red" in asked  # the friend's own chat is theirs
    # The control: recall is on, and in the owner's own chat the same question recalls the code word.
    fake.send_message("what do you know about the lighthouse?", user_id=OWNER)
    fake.wait_for(lambda: any("yours" == t for t in texts(fake, OWNER)), timeout=15)
    recalled = chat_server.chat_requests[-1]["messages"][-1]["content"]
    assert "[Recalled memory" in recalled and OWNER_SECRET in recalled


def test_a_forward_in_a_friends_chat_asks_before_an_overwrite_of_their_own_file_not_of_the_owners(
    fake, start_bot, chat_server, workspace
):
    """Outside content in a guest turn: an overwrite is judged by the guest's own area, not the owner's files."""
    area = guest_area(f"tg:{FRIEND}")
    workspace.write_text(f"{area}/notes/mine.md", "the friend's own list")
    workspace.write_text("notes/owners.md", "the owner's note")  # the owner has it; the friend's area has not
    friend_bot(start_bot)
    chat_server.enqueue(
        call("file", action="write", path="notes/mine.md", content="overwritten by a forward"),
        call("file", action="write", path="notes/owners.md", content="new in the friend's area"),
        '{"reply": "done"}',
    )
    fake.send_message("keep this", user_id=FRIEND, forwarded_from="Mallory")
    fake.wait_for(lambda: any("done" in t for t in texts(fake, FRIEND)), timeout=15)
    fed_back = [r["messages"][-1]["content"] for r in chat_server.chat_requests[1:3]]
    assert "overwrites the existing file notes/mine.md" in fed_back[0], fed_back[0]
    assert workspace.read_text(f"{area}/notes/mine.md") == "the friend's own list"
    written = workspace.read_text(f"{area}/notes/owners.md")  # a new file: written, marked as outside content
    assert written.endswith("new in the friend's area") and "untrusted: true" in written, fed_back[1]
    assert workspace.read_text("notes/owners.md") == "the owner's note"
