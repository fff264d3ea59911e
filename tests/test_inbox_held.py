"""A message the inbox cannot store is held, never lost (issue 26 follow-up): not confirmed to Telegram (a
webhook's POST refused with 503), not read past on Signal's stream; the cause logged once; each chat told once;
answered exactly once when storage works again. The real bots against the fake Bot API / signal-cli daemon and
the fake model.

Storage is broken as tests/inbox_faults.py breaks it (a file where the inbox's folder is); the disk-full and
read-only file systems are tests/test_reliability_disk.py (they need ``mount``).
"""

from __future__ import annotations

import json
import logging

import pytest

from assistant_framework.inbox import PENDING_DIR, Inbox
from messaging_llm_bot.conversation import held
from tests.crash_bot import echo_reply
from tests.inbox_faults import break_inbox, repair_inbox
from tests.signal_harness import FRIEND as SIGNAL_FRIEND
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.signal_harness import wait_for
from tests.telegram_harness import OWNER, busy_queue, texts

FRIEND = 42
CANNOT_STORE = "the inbox cannot store messages"


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    """Storing tried again after 0.05 s, then every 0.1 s (the product's 1 s doubled up to 30 s): the tests wait
    for the third try while broken and for the next one after the repair."""
    monkeypatch.setattr(held, "RETRY_FIRST_SECONDS", 0.05)
    monkeypatch.setattr(held, "RETRY_MAX_SECONDS", 0.1)


def asked(chat_server) -> list[str]:
    """The user messages the model was asked to answer, in order."""
    return [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests]


def test_telegram_holds_an_update_it_cannot_store_and_answers_it_once_storage_works(
    fake, start_bot, chat_server, workspace, caplog
):
    chat_server.set_handler(echo_reply)
    # Each message its own turn (busy_mode queue): the answers per message are the point.
    bot = start_bot(config_patch=busy_queue, allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, progress=False)
    fake.send_message("first")
    fake.wait_for(lambda: "re: first" in texts(fake))
    fake.wait_for(lambda: not Inbox(workspace).pending())
    pending = break_inbox(workspace)
    with caplog.at_level(logging.INFO):
        fake.send_message("held one")
        fake.send_message("held two")
        fake.send_message("held too", user_id=FRIEND)
        notice = "I cannot save messages right now"
        fake.wait_for(lambda: any(notice in t for t in texts(fake)))
        fake.wait_for(lambda: bot.service.storage.tries >= 3)  # tried again, and again
        assert asked(chat_server) == ["first"]  # nothing of what waits reached the model
        assert sum(notice in t for t in texts(fake)) == 1  # the owner's chat is told once
        assert texts(fake, FRIEND) == []  # held behind the owner's: Telegram's order is kept
        repair_inbox(pending)
        fake.wait_for(lambda: "re: held too" in texts(fake, FRIEND), timeout=15)
        fake.wait_for(lambda: "re: held two" in texts(fake), timeout=15)
    assert asked(chat_server).count("held one") == 1 and asked(chat_server).count("held two") == 1
    assert [t for t in texts(fake) if t.startswith("re:")] == ["re: first", "re: held one", "re: held two"]
    assert texts(fake, FRIEND) == ["re: held too"]  # its notice came only when its update was tried
    messages = [r.getMessage() for r in caplog.records]
    assert sum(CANNOT_STORE in m for m in messages) == 1, "the cause is logged once, not per try or update"
    assert any("Not a directory" in m for m in messages if CANNOT_STORE in m)
    assert any("stores messages again" in m for m in messages)
    fake.wait_for(lambda: not Inbox(workspace).pending())


def test_signal_holds_a_message_it_cannot_store_and_answers_it_once_storage_works(
    start, daemon, chat_server, workspace, caplog
):
    chat_server.set_handler(echo_reply)
    bot = start(owner=SIGNAL_OWNER)
    daemon.message(SIGNAL_OWNER, "first")
    daemon.wait_sent(1)
    wait_for(lambda: not Inbox(workspace).pending(), what="the first message answered and completed")
    pending = break_inbox(workspace)
    with caplog.at_level(logging.INFO):
        daemon.message(SIGNAL_OWNER, "held one")
        daemon.message(SIGNAL_FRIEND, "held too")
        [notice] = daemon.wait_sent(2)[1:]
        assert "I cannot save messages right now" in notice["message"] and notice["recipient"] == [SIGNAL_OWNER]
        wait_for(lambda: sum(CANNOT_STORE in r.getMessage() for r in caplog.records) == 1, what="the log line")
        wait_for(lambda: bot.service.storage.tries >= 3, what="storing tried again, and again")
        assert asked(chat_server) == ["first"]  # nothing of what waits reached the model
        repair_inbox(pending)
        daemon.wait_sent(4, timeout=15)
    replies = {s["recipient"][0]: s["message"] for s in daemon.sent[2:]}
    assert replies == {SIGNAL_OWNER: "re: held one", SIGNAL_FRIEND: "re: held too"}
    assert sorted(asked(chat_server)) == ["first", "held one", "held too"]
    messages = [r.getMessage() for r in caplog.records]
    assert sum(CANNOT_STORE in m for m in messages) == 1
    assert any("stores messages again" in m for m in messages)
    wait_for(lambda: not Inbox(workspace).pending(), what="the inbox emptied")
    assert json.dumps(daemon.sent).count("I cannot save messages") == 1


def test_telegram_webhook_mode_refuses_an_update_it_cannot_store_and_answers_it_once_telegram_sends_it_again(
    fake, start_bot, chat_server, workspace, caplog
):
    """A webhook's 200 tells Telegram the update is delivered, so it comes only once the inbox holds the update on
    disk: while the inbox cannot store, the POST is answered 503 (Telegram sends it again later) and the chat is told
    once; nothing waits in memory only, where a crash would lose it. The resent update is answered once."""
    from tests.test_telegram_webhook import free_port, post, update

    chat_server.set_handler(echo_reply)
    port, secret = free_port(), "s3cret-token-0123456789"
    hook = {"listen": "127.0.0.1", "port": port, "url": f"http://127.0.0.1:{port}/telegram", "secret_token": secret}
    start_bot(mode="webhook", webhook=hook, progress=False)
    workspace.path(PENDING_DIR).mkdir(parents=True, exist_ok=True)
    pending = break_inbox(workspace)
    held_update = update(930, "held over the webhook")
    with caplog.at_level(logging.ERROR):
        assert post(port, held_update, secret=secret).status_code == 503
    [logged] = [r.getMessage() for r in caplog.records if CANNOT_STORE in r.getMessage()]
    assert "refused, so the platform sends it again" in logged  # not held: nothing waits in memory
    fake.wait_for(lambda: any("I cannot save messages right now" in t for t in texts(fake)), timeout=10)
    assert post(port, held_update, secret=secret).status_code == 503  # Telegram's retry, still not storable
    # /stop is no message the model reads: nothing to store, answered at once.
    stop = update(931, "/stop")
    stop["message"]["entities"] = [{"type": "bot_command", "offset": 0, "length": len("/stop")}]
    assert post(port, stop, secret=secret).status_code == 200
    fake.wait_for(lambda: any("nothing to stop" in t for t in texts(fake)), timeout=10)
    assert asked(chat_server) == []
    assert sum("I cannot save messages" in t for t in texts(fake)) == 1  # told once, not per try
    repair_inbox(pending)
    assert post(port, held_update, secret=secret).status_code == 200  # Telegram's next retry
    fake.wait_for(lambda: "re: held over the webhook" in texts(fake), timeout=15)
    assert post(port, held_update, secret=secret).status_code == 200  # once more (a 200 lost on its way): no turn
    fake.wait_for(lambda: not Inbox(workspace).pending())
    assert asked(chat_server) == ["held over the webhook"]
    assert texts(fake).count("re: held over the webhook") == 1
