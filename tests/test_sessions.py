"""Sessions: forum topics as conversations of their own, /new, /sessions and /resume (agent/sessions.py).

Through the real bot and the fake Bot API (topics in the owner's private chat and in a forum group),
through the terminal chat's command path, and the session list itself (a broken list, the bound).
"""

from __future__ import annotations

import pytest
import telegram

from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.agent.sessions import MAX_SESSIONS, Sessions
from messaging_llm_bot.channels.telegram.settings import message_conversation, topic_of
from messaging_llm_bot.conversation.commands import resume_number, run_command
from tests.telegram_harness import OWNER


def _request_text(chat_server) -> str:
    """Every message of the latest model request, as one text."""
    return "\n".join(str(m.get("content")) for m in chat_server.chat_requests[-1]["messages"])


def _say(fake, chat_server, text: str, topic: int | None, chat_id: int | None = None, **kw) -> str:
    """Send ``text`` in ``topic`` and wait for the bot's answer there; returns the text of the model request."""
    before = len(fake.topic_messages(chat_id or OWNER, topic))
    asked = len(chat_server.chat_requests)
    fake.send_message(text, chat_id=chat_id, topic=topic, **kw)
    fake.wait_for(lambda: len(fake.topic_messages(chat_id or OWNER, topic)) > before)
    return _request_text(chat_server) if len(chat_server.chat_requests) > asked else ""


def _command(fake, text: str, topic: int | None, chat_id: int | None = None, **kw) -> str:
    before = len(fake.topic_messages(chat_id or OWNER, topic))
    fake.send_message(text, chat_id=chat_id, topic=topic, **kw)
    return fake.wait_for(lambda: fake.topic_messages(chat_id or OWNER, topic)[before:])[-1]["text"]


def test_two_topics_keep_separate_histories_and_new_and_resume_switch_sessions(fake, start_bot, chat_server):
    start_bot(progress=False)
    _say(fake, chat_server, "my cat is called Tomasz", topic=10)
    _say(fake, chat_server, "the code word is zebra", topic=20)

    # Each topic's request holds only its own earlier turns; each answer went to its topic.
    seen = _say(fake, chat_server, "what is my cat called?", topic=10)
    assert "Tomasz" in seen and "zebra" not in seen
    seen = _say(fake, chat_server, "and the code word?", topic=20)
    assert "zebra" in seen and "Tomasz" not in seen
    assert len(fake.topic_messages(OWNER, 10)) == 2 and len(fake.topic_messages(OWNER, 20)) == 2
    assert fake.topic_messages(OWNER, None) == []  # nothing landed outside the topics

    # /new: a request without the earlier turns; the other topic is untouched.
    assert "Started a new conversation (#2)" in _command(fake, "/new", topic=10)
    seen = _say(fake, chat_server, "hello again", topic=10)
    assert "Tomasz" not in seen and "hello again" in seen
    assert "already a new conversation" not in _command(fake, "/new", topic=20)  # topic 20 had turns: a new one

    listing = _command(fake, "/sessions", topic=10)
    assert "#2" in listing and "#1" in listing and "my cat is called Tomasz" in listing
    assert listing.index("#2") < listing.index("#1")  # newest first, the active one marked
    assert "now" in listing.splitlines()[1]

    # /resume 1 brings the earlier turns back (and not the new session's).
    assert "Continuing conversation #1" in _command(fake, "/resume 1", topic=10)
    seen = _say(fake, chat_server, "so what was the cat's name?", topic=10)
    assert "Tomasz" in seen and "hello again" not in seen
    assert "no conversation #7" in _command(fake, "/resume 7", topic=10)
    assert "Usage: /resume N" in _command(fake, "/resume x", topic=10)
    # A number this topic does not have (topic 20 has a #3) changes nothing: #1 stays the active session
    # here (it did not become the newest, #2).
    _say(fake, chat_server, "topic twenty again", topic=20)
    assert "Started a new conversation (#3)" in _command(fake, "/new", topic=20)
    for number in ("3", "7"):
        assert f"no conversation #{number}" in _command(fake, f"/resume {number}", topic=10)
        seen = _say(fake, chat_server, f"still the cat? ({number})", topic=10)
        assert "Tomasz" in seen and "hello again" not in seen
    listing = _command(fake, "/sessions", topic=10)
    assert "#3" not in listing and [line for line in listing.splitlines() if "now" in line][0].lstrip().startswith(
        "#1"
    ), listing


def test_a_session_and_a_topic_whose_ids_clean_to_one_folder_name_share_nothing(
    fake, start_bot, chat_server, workspace
):
    """Session #2 of the owner's chat is ``tg:OWNER#2`` and its topic 2 is ``tg:OWNER:2``: both clean to the
    folder name ``tg_OWNER_2``. They keep their own history, log and session list all the same."""
    start_bot(progress=False)
    _say(fake, chat_server, "my cat is called Tomasz", topic=None)
    assert "Started a new conversation (#2)" in _command(fake, "/new", topic=None)
    _say(fake, chat_server, "the code word is zebra", topic=None)  # in session tg:OWNER#2
    seen = _say(fake, chat_server, "what do you know about me?", topic=2)
    assert "zebra" not in seen and "Tomasz" not in seen
    listing = _command(fake, "/sessions", topic=2)
    assert "#2" not in listing and "zebra" not in listing and "what do you know" in listing
    seen = _say(fake, chat_server, "and the code word?", topic=None)
    assert "zebra" in seen and "what do you know" not in seen
    # On disk: each conversation's history (and log, where memory keeps one) in a folder of its own.
    kept = {
        folder.name: "".join(f.read_text() for f in folder.iterdir() if f.name != "sessions.json")
        for folder in (workspace.root / "conversations").iterdir()
        if folder.is_dir()
    }
    holding_zebra = [name for name, text in kept.items() if "zebra" in text]
    holding_topic = [name for name, text in kept.items() if "what do you know" in text]
    assert len(holding_zebra) == 1 and len(holding_topic) == 1 and holding_zebra != holding_topic, kept


def test_a_forum_groups_topics_are_separate_and_answered_in_their_topic(fake, start_bot, chat_server):
    group = -100555
    start_bot(progress=False, group_mode="all")
    kw = {"chat_type": "supergroup", "user_id": OWNER}
    _say(fake, chat_server, "remember apricot", topic=3, chat_id=group, **kw)
    seen = _say(fake, chat_server, "what fruit?", topic=4, chat_id=group, **kw)
    assert "apricot" not in seen
    # The group's General (no topic) is a conversation of its own too.
    seen = _say(fake, chat_server, "and here?", topic=None, chat_id=group, **kw)
    assert "apricot" not in seen and "what fruit" not in seen
    assert [m["message_thread_id"] for m in fake.topic_messages(group, 3)] == [3]
    assert "Started a new conversation" in _command(fake, "/new", topic=3, chat_id=group, **kw)


def _message(**fields) -> telegram.Message:
    data = {"message_id": 5, "date": 0, "chat": {"id": -1007, "type": "supergroup"}, "text": "hi", **fields}
    return telegram.Message.de_json(data, None)


def test_only_a_topic_message_names_a_topic_not_a_reply_thread():
    # In a group without topics a reply carries message_thread_id (the chain of replies): same conversation.
    assert topic_of(_message(message_thread_id=2)) is None
    assert message_conversation(_message(message_thread_id=2)) == "tg:-1007"
    assert message_conversation(_message(message_thread_id=2, is_topic_message=True)) == "tg:-1007:2"


def test_the_terminal_chat_has_new_sessions_and_resume(bot_config, workspace, chat_server, make_agent):
    agent = make_agent(bot_config, workspace)

    class Parts:  # what run_command uses of a runtime
        pass

    runtime = Parts()
    runtime.agent = agent
    agent.handle(AgentMessage("console", "my plant is a fern"))
    assert "Started a new conversation (#2)" in run_command(runtime, "console", "/new")
    assert "already a new conversation (#2)" in run_command(runtime, "console", "/new")
    agent.handle(AgentMessage("console", "second topic"))
    assert "fern" not in _request_text(chat_server)
    assert "Continuing conversation #1" in run_command(runtime, "console", "/resume #1")
    agent.handle(AgentMessage("console", "what plant?"))
    assert "fern" in _request_text(chat_server) and "second topic" not in _request_text(chat_server)
    # /reset clears the active session only.
    assert "Cleared" in run_command(runtime, "console", "/reset")
    run_command(runtime, "console", "/resume 2")
    agent.handle(AgentMessage("console", "and now?"))
    assert "second topic" in _request_text(chat_server)


@pytest.mark.slow(reason="fills the session list to its bound (out of make check's tier)")
def test_a_broken_session_list_means_session_one_and_the_list_is_bounded(workspace):
    sessions = Sessions(workspace)
    workspace.write_text("conversations/console/sessions.json", "{not json")
    assert sessions.active("console") == "console"
    for _ in range(MAX_SESSIONS + 5):
        sessions.new("console", current_empty=False)
    listed = sessions.list("console")
    assert len(listed) == MAX_SESSIONS and listed[-1].number == MAX_SESSIONS + 6
    assert sessions.active("console") == f"console#{MAX_SESSIONS + 6}"
    assert Sessions(workspace).active("console") == f"console#{MAX_SESSIONS + 6}"  # read back from the file
    assert sessions.resume("console", 1) is None  # left the list (its log and history stay)
    assert [resume_number(a) for a in ("3", "#3", "0", "-1", "x", "9999999")] == [3, 3, None, None, None, None]


def test_signal_has_new_sessions_and_resume(bot_config, workspace, chat_server, tmp_path):
    from tests.fakes.signal_daemon import FakeSignalDaemon
    from tests.signal_harness import BOT, RunningSignal, signal_config
    from tests.signal_harness import OWNER as SIGNAL_OWNER
    from tests.telegram_harness import make_runtime

    with FakeSignalDaemon(BOT) as daemon:
        with RunningSignal(make_runtime(signal_config(bot_config, daemon), workspace, tmp_path)):
            daemon.wait_connected()

            def say(text: str, n: int) -> str:
                daemon.message(SIGNAL_OWNER, text)
                return daemon.wait_sent(n)[n - 1]["message"]

            say("my boat is the Albatross", 1)
            assert "Started a new conversation (#2)" in say("/new", 2)
            say("a different subject", 3)
            assert "Albatross" not in _request_text(chat_server)
            assert "#1" in say("/sessions", 4)
            assert "Continuing conversation #1" in say("/resume 1", 5)
            say("what is my boat called?", 6)
            assert "Albatross" in _request_text(chat_server) and "different subject" not in _request_text(chat_server)


def test_a_noted_message_is_written_after_the_reply_and_never_over_a_newer_list(tmp_path):
    """With ``later`` (the bot's trace writer), ``touch`` changes the list in memory at once and queues one write
    of it per place; the queued write takes later notes too and, run after a durable change (``new``), writes the
    newest list, not the one it was queued with."""
    import json
    from datetime import datetime

    from assistant_framework.workspace import Workspace

    workspace = Workspace(tmp_path / "ws")
    queued: list[tuple[object, str]] = []
    sessions = Sessions(workspace, later=lambda job, label: queued.append((job, label)))
    when = datetime(2026, 12, 3, 12, 0)
    listed = sessions._file("tg:1")
    sessions.touch("tg:1", "tg:1", when, "first message")
    sessions.touch("tg:1", "tg:1", when, "second")
    assert [s.messages for s in sessions.list("tg:1")] == [2]  # at once, in memory
    assert not workspace.exists(listed) and len(queued) == 1  # one write queued
    job, label = queued.pop()
    job()
    stored = json.loads(workspace.read_text(listed))
    assert stored["sessions"][0]["messages"] == 2 and stored["sessions"][0]["first"] == "first message"
    sessions.touch("tg:1", "tg:1", when, "third")  # queued again
    session, made = sessions.new("tg:1", current_empty=False)  # durable, before the queued write runs
    assert made and json.loads(workspace.read_text(listed))["active"] == 2
    queued.pop()[0]()
    stored = json.loads(workspace.read_text(listed))
    assert stored["active"] == 2 and [row["messages"] for row in stored["sessions"]] == [3, 0]
    assert "tg:1" in label


def test_a_full_session_list_is_one_line_a_session_and_copies_stay_apart(workspace):
    """A place with the most sessions: the list is written a session a line (by the C encoder; indented it took 0.2
    ms at 50) and reads back the same after a restart; what a caller gets is a copy (changing it changes nothing)."""
    from datetime import UTC, datetime

    sessions = Sessions(workspace)
    for _ in range(MAX_SESSIONS - 1):
        sessions.new("tg:7", current_empty=False)
    sessions.touch("tg:7", sessions.active("tg:7"), datetime(2026, 12, 4, 9, 30, tzinfo=UTC), 'Grüße, "quoted"')
    (rel,) = workspace.list("conversations/**/sessions.json")
    assert workspace.read_text(rel).count("\n") == MAX_SESSIONS + 2
    listed = sessions.list("tg:7")
    listed[-1].messages = 99
    assert sessions.list("tg:7")[-1].messages == 1
    again = Sessions(workspace).list("tg:7")
    assert again == sessions.list("tg:7") and again[-1].first == 'Grüße, "quoted"'
    assert Sessions(workspace).active("tg:7") == f"tg:7#{MAX_SESSIONS}"
