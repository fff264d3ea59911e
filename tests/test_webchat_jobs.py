"""The web chat takes the work the scheduler routes to ``web:`` chats (issue 43): a due reminder set in the web
chat is shown there, and a job made there is delivered there once; and its commands are the shared ones, /stop
at once (in-process: tests/webchat_harness.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from tests.waiting import wait_until
from tests.webchat_harness import start_webchat  # noqa: F401 - the fixture


def test_a_reminder_set_in_the_web_chat_is_shown_there(start_webchat, workspace) -> None:  # noqa: F811
    from assistant_framework.stores.reminders import ReminderStore

    ReminderStore(workspace).add("web:owner", "Call Anna", datetime.now(timezone.utc) - timedelta(seconds=5), "UTC")
    chat = start_webchat()
    shown = chat.replies_until(lambda texts: any("Call Anna" in t for t in texts))
    assert len([t for t in shown if "Call Anna" in t]) == 1


def test_a_job_of_the_web_chat_is_delivered_there_once(start_webchat, chat_server, workspace) -> None:  # noqa: F811
    from assistant_framework.jobs import JOBS_FILE, RUNS_FILE

    created = (datetime.now(timezone.utc) - timedelta(minutes=60, seconds=10)).isoformat(timespec="seconds")
    row = {"id": "j1", "name": "stretch", "every_minutes": 60, "created_at": created, "message": "Stretch"}
    workspace.write_json(JOBS_FILE, [{**row, "chat_id": "web:owner"}])
    chat = start_webchat(patch=lambda config: config.update(jobs={"poll_seconds": 0.1}))
    shown = chat.replies_until(lambda texts: any("Stretch" in t for t in texts))
    wait_until(lambda: len(workspace.read_jsonl(RUNS_FILE)) == 1, what="the run's line")
    assert workspace.read_jsonl(RUNS_FILE)[0]["outcome"] == "delivered" and chat_server.chat_requests == []
    assert len([t for t in chat.replies() if "Stretch" in t]) == 1 and shown


def test_the_chats_commands_are_answered_without_the_model_and_stop_ends_the_turn_at_once(
    start_webchat,  # noqa: F811
    chat_server,
) -> None:
    from messaging_llm_bot.conversation.commands import STOPPING_TEXT

    chat = start_webchat()
    chat.send("/new")
    shown = chat.replies_until(lambda texts: any("conversation (#" in t for t in texts))
    assert chat_server.chat_requests == []  # a command is no turn
    # /stop is answered at once, not behind the turn it stops (that one waits a minute for the model).
    chat_server.enqueue({"content": '{"reply": "too late"}', "delay": 60})
    chat.send("a slow question")
    assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
    chat.send("/stop")
    shown = chat.replies_until(lambda texts: STOPPING_TEXT in texts)
    assert "too late" not in shown


def test_the_chats_message_store_is_private_whatever_the_umask(start_webchat, chat_server, workspace) -> None:  # noqa: F811
    import os
    import stat

    old = os.umask(0o022)
    try:
        chat = start_webchat()
        chat.send("hello")
        chat.replies_until(lambda texts: bool(texts))
    finally:
        os.umask(old)
    store = workspace.path("state/webchat/messages.jsonl")
    assert stat.S_IMODE(store.stat().st_mode) == 0o600


def test_a_collectors_notice_reaches_the_web_chat(start_webchat) -> None:  # noqa: F811
    chat = start_webchat()
    chat.runtime._notify_all("rss", "A new post on the garden blog")  # what a collector's run calls
    shown = chat.replies_until(lambda texts: any("garden blog" in t for t in texts))
    assert len([t for t in shown if "garden blog" in t]) == 1
