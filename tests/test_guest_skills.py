"""What a guest turn is offered (issues 34.6, 26.13): ``policy.guest_skills`` is the whole list, in the
prompt, the answer schema, the native tools and the parser alike; ``[]`` means no skill at all. And two
skills whose names become the same native tool name cannot both load. The real bot (python-telegram-bot
against the fake Bot API; the Signal service against the fake daemon), the fake model server."""

from __future__ import annotations

import json

import pytest

from assistant_framework.skills import SkillManager
from tests.signal_harness import FRIEND as SIGNAL_FRIEND
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.telegram_harness import OWNER, texts

FRIEND = 42
NOTE = "# Private\nthe owner's note\n"


def native(config: dict) -> None:
    config["llm"]["runners"][0]["tool_transport"] = "native"


def guests(skills: list[str] | None, *, tools: bool = False):
    def patch(config: dict) -> None:
        if skills is not None:
            config["policy"] = {"guest_skills": skills}
        if tools:
            native(config)

    return patch


def offered(request: dict) -> list[str]:
    """The skill names one model request offers: native tools, or the answer schema's call options."""
    if request.get("tools"):
        return sorted(t["function"]["name"] for t in request["tools"])
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    return sorted(o["properties"]["skill"]["enum"][0] for o in schema.get("anyOf", []) if "skill" in o["properties"])


def friend_turn(fake, chat_server, *answers: str, reply: str = "answered") -> None:
    chat_server.enqueue(*answers, json.dumps({"reply": reply}))
    fake.send_message("hello, what can you do?", user_id=FRIEND)
    fake.wait_for(lambda: any(reply in t for t in texts(fake, FRIEND)), timeout=15)


@pytest.mark.parametrize("tools", [True, False], ids=["native-tools", "json-schema"])
def test_a_guest_request_offers_only_the_guest_skills(fake, start_bot, chat_server, tools):
    start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, config_patch=guests(["time", "add"], tools=tools))
    friend_turn(fake, chat_server)
    assert offered(chat_server.chat_requests[-1]) == ["add", "time"]
    # The owner's own chat is offered everything, in the same process.
    chat_server.enqueue('{"reply": "owner answered"}')
    fake.send_message("hi", user_id=OWNER)
    fake.wait_for(lambda: any("owner answered" in t for t in texts(fake, OWNER)), timeout=15)
    assert {"notes", "tasks", "file", "add", "time"} <= set(offered(chat_server.chat_requests[-1]))


def test_a_guest_request_with_the_default_guest_skills_lists_no_owner_tool(fake, start_bot, chat_server):
    start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, config_patch=native)
    friend_turn(fake, chat_server)
    assert offered(chat_server.chat_requests[-1]) == ["conversation_search", "file", "memory_search", "time", "web"]


@pytest.mark.parametrize("tools", [True, False], ids=["native-tools", "json-schema"])
def test_no_guest_skills_means_none_at_all(fake, start_bot, chat_server, workspace, tools):
    workspace.write_text("notes/private.md", NOTE)
    start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, config_patch=guests([], tools=tools))
    tool_call = {"tool_calls": [{"id": "c1", "name": "file", "arguments": {"action": "list"}}]}
    friend_turn(
        fake,
        chat_server,
        tool_call
        if tools
        else json.dumps({"skill": "file", "args": {"action": "write", "path": "a.md", "content": "x"}}),
    )
    first = chat_server.chat_requests[0]
    assert "tools" not in first and offered(first) == []
    system = first["messages"][0]["content"]
    assert "no skills in this chat" in system and "- file:" not in system and "- time:" not in system
    assert "no skill named 'file' in this chat" in json.dumps(chat_server.chat_requests[1]["messages"])
    assert list(workspace.root.glob("guests/*/a.md")) == [] and workspace.read_text("notes/private.md") == NOTE


def test_no_guest_skills_on_signal_either(start, daemon, chat_server, workspace):
    chat_server.enqueue(json.dumps({"skill": "time", "args": {"action": "now"}}), '{"reply": "answered"}')
    start(patch=guests([]), owner=SIGNAL_OWNER)
    daemon.message(SIGNAL_FRIEND, "what time is it?")
    [sent] = daemon.wait_sent(1)
    assert sent["message"].startswith("answered")
    assert offered(chat_server.chat_requests[0]) == []
    assert "no skill named 'time' in this chat" in json.dumps(chat_server.chat_requests[1]["messages"])


# -- two skills, one tool name -------------------------------------------------------------------------

SKILL = 'DESCRIPTION = "{name}"\nNAME = "{name}"\n\ndef run(workspace, args, context=None):\n    return "{name} ran"\n'


def _skill(folder, name: str) -> None:
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(SKILL.format(name=name))


def test_two_skills_with_one_native_tool_name_are_refused_at_load(tmp_path, ws):
    _skill(tmp_path / "one" / "a", "my.notes")
    _skill(tmp_path / "one" / "b", "my_notes")
    _skill(tmp_path / "two" / "c", "my-notes")  # a different tool name: loads
    _skill(tmp_path / "two" / "d", "my.notes")  # the same name in a later folder replaces it, as ever
    manager = SkillManager([tmp_path / "one", tmp_path / "two"], ws)
    assert set(manager.names()) == {"my.notes", "my-notes"} and manager.get("my.notes").folder.name == "d"
    [error] = manager.errors
    assert error.name == "b" and "'my_notes'" in error.error and "'my.notes'" in error.error
    assert "rename one" in error.error


def test_the_bot_starts_with_the_first_of_two_and_says_why_the_other_is_missing(
    fake, start_bot, chat_server, tmp_path, caplog
):
    _skill(tmp_path / "extra" / "a", "my.notes")
    _skill(tmp_path / "extra" / "b", "my_notes")

    def patch(config: dict) -> None:
        config["runtime"]["skills_dirs"] = [*config["runtime"]["skills_dirs"], str(tmp_path / "extra")]
        native(config)

    start_bot(config_patch=patch)
    chat_server.enqueue({"tool_calls": [{"id": "c1", "name": "my_notes", "arguments": {}}]}, '{"reply": "done"}')
    fake.send_message("take a note")
    fake.wait_for(lambda: any("done" in t for t in texts(fake)), timeout=15)
    tools = [t["function"]["name"] for t in chat_server.chat_requests[0]["tools"]]
    assert tools.count("my_notes") == 1
    assert "my.notes ran" in json.dumps(chat_server.chat_requests[1]["messages"])
    assert any("offered to the model as the tool 'my_notes'" in r.getMessage() for r in caplog.records)


# -- /help, /skills, /skill NAME show a chat only its own skills ----------------------------------------

GROUP_CHAT = -1001234


def _command(fake, text: str, *, user_id: int, chat_id: int | None = None, chat_type: str = "private") -> str:
    """Send a command and return the bot's answer in that chat."""
    chat = chat_id if chat_id is not None else user_id
    before = len(texts(fake, chat))
    fake.send_message(text, user_id=user_id, chat_id=chat, chat_type=chat_type)
    fake.wait_for(lambda: len(texts(fake, chat)) > before, timeout=15)
    return texts(fake, chat)[-1]


def _listed(text: str) -> set[str]:
    """The skill names a /skills answer lists (``- name — description``; Telegram shows ``⦁``)."""
    return {line[2:].split(" — ")[0] for line in text.splitlines() if line[:2] in ("- ", "⦁ ")}


def test_guests_see_only_their_skills_in_help_skills_and_skill_on_telegram(fake, start_bot):
    start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, config_patch=guests(["time", "add"]))
    # A friend's private chat: the guest skills, nothing of the owner's.
    assert _listed(_command(fake, "/skills", user_id=FRIEND)) == {"add", "time"}
    help_text = _command(fake, "/help", user_id=FRIEND)
    assert "add, time" in help_text and "notes" not in help_text and "/now" not in help_text
    assert "There is no skill named 'notes'" in _command(fake, "/skill notes", user_id=FRIEND)
    assert "Did you mean" not in _command(fake, "/skill tasks", user_id=FRIEND)  # not even a near name
    assert _command(fake, "/skill time", user_id=FRIEND).startswith("time")
    # A group is a guest chat even for the owner.
    group = _listed(_command(fake, "/skills", user_id=OWNER, chat_id=GROUP_CHAT, chat_type="supergroup"))
    assert group == {"add", "time"}
    # The owner's own chat: everything.
    owner = _listed(_command(fake, "/skills", user_id=OWNER))
    assert {"notes", "tasks", "file", "add", "time"} <= owner
    assert "notes" in _command(fake, "/help", user_id=OWNER) and "/now" in texts(fake, OWNER)[-1]
    assert _command(fake, "/skill notes", user_id=OWNER).startswith("notes")


def test_guests_see_only_their_skills_on_signal(start, daemon):
    from tests.signal_harness import GROUP

    daemon.add_group(GROUP, "friends", [SIGNAL_OWNER, SIGNAL_FRIEND, daemon.account])
    start(patch=guests(["time"]), owner=SIGNAL_OWNER)
    answers = []
    for source, text, group in (
        (SIGNAL_FRIEND, "/skills", None),
        (SIGNAL_FRIEND, "/help", None),
        (SIGNAL_FRIEND, "/skill notes", None),
        (SIGNAL_OWNER, "/skills", GROUP),
    ):
        daemon.message(source, text, group_id=group)
        answers.append(daemon.wait_sent(len(answers) + 1)[len(answers)]["message"])
    friend_skills, friend_help, friend_skill, group_skills = answers
    # The owner's list is over Signal's 2,000 bytes: it comes as several messages, the footer in the last.
    daemon.message(SIGNAL_OWNER, "/skills")
    parts = [s["message"] for s in daemon.wait_sent(5)[4:]]
    while "Details: /skill NAME" not in parts[-1]:
        parts = [s["message"] for s in daemon.wait_sent(4 + len(parts) + 1)[4:]]
    owner_skills = "\n".join(parts)
    assert _listed(friend_skills) == {"time"} and _listed(group_skills) == {"time"}
    assert "time" in friend_help and "notes" not in friend_help and "/reload" not in friend_help
    assert "There is no skill named 'notes'" in friend_skill
    assert {"notes", "tasks", "file", "time"} <= _listed(owner_skills)


# -- reminders given to guests --------------------------------------------------------------------------

REMIND = {"action": "add", "text": "call the plumber", "in_minutes": 5}


def test_a_guests_reminder_is_refused_in_one_sentence_not_stored_where_it_never_arrives(
    fake, start_bot, chat_server, workspace
):
    """A guest turn runs on the chat's own area, where no scheduler looks: the reminder was stored there and
    never delivered. Given `reminders`, a guest's add is refused with the reason and nothing is stored."""
    start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, config_patch=guests(["reminders"]))
    friend_turn(fake, chat_server, json.dumps({"skill": "reminders", "args": REMIND}))
    assert "owner's own chat only" in json.dumps(chat_server.chat_requests[1]["messages"])
    assert list(workspace.root.glob("**/reminders.json")) == []


def test_a_reminder_asked_for_in_a_signal_group_is_refused_too(start, daemon, chat_server, workspace):
    daemon.add_group("Z3JvdXAtZmFtaWx5", "Family", [SIGNAL_OWNER, SIGNAL_FRIEND])
    chat_server.enqueue(json.dumps({"skill": "reminders", "args": REMIND}), '{"reply": "answered"}')
    start(patch=guests(["reminders"]), owner=SIGNAL_OWNER, group_mode="all")
    daemon.message(SIGNAL_OWNER, "remind us in 5 minutes to call the plumber", group_id="Z3JvdXAtZmFtaWx5")
    daemon.wait_sent(1)
    assert "owner's own chat only" in json.dumps(chat_server.chat_requests[1]["messages"])
    assert list(workspace.root.glob("**/reminders.json")) == []
