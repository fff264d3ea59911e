"""A reminder the chat refuses for good (blocked bot, chat not found, unregistered Signal user) is marked
failed with the reason and not sent again; temporary errors are still retried. Real frontends against the
fakes (FakeBotAPI, FakeSignalDaemon)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.stores.reminders import REMINDERS_FILE, ReminderStore
from tests.fakes.signal_daemon import RpcError
from tests.signal_harness import FRIEND, wait_for
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.telegram_harness import OWNER, texts


@pytest.fixture
def start_signal(start):
    """The Signal harness's ``start`` (this file's ``start_bot`` is Telegram's)."""
    return start


GROUP = -100777


def _by_id(workspace) -> dict[str, dict]:
    return {r["id"]: r for r in ReminderStore(workspace).list()}


def _sends_to(fake, chat_id: int) -> list[dict]:
    return [c for c in fake.calls("sendMessage") if str(c["params"].get("chat_id")) == str(chat_id)]


def _polls_pass(workspace, chat, deliver_count, n: int = 3) -> None:
    """Add ``n`` reminders due now, one at a time, each found only by a later poll of the store."""
    for i in range(n):
        ReminderStore(workspace).add(chat, f"tick {i}", datetime.now(timezone.utc), "Europe/Berlin")
        deliver_count(i + 1)


@pytest.mark.parametrize(
    "status, reason",
    [(403, "Forbidden: bot was blocked by the user"), (400, "Chat not found")],
    ids=["blocked", "chat-not-found"],
)
def test_a_reminder_telegram_refuses_for_good_is_marked_failed_and_not_sent_again(
    fake, start_bot, workspace, status, reason
):
    fake.refuse_chat(GROUP, status=status)
    store = ReminderStore(workspace)
    now = datetime.now(timezone.utc)
    refused = store.add(GROUP, "team standup", now - timedelta(seconds=10), "Europe/Berlin")
    fine = store.add(OWNER, "call mum", now - timedelta(seconds=10), "Europe/Berlin")
    start_bot()
    fake.wait_for(lambda: _by_id(workspace)[refused["id"]]["status"] == "failed")
    _polls_pass(workspace, OWNER, lambda n: fake.wait_for_messages(OWNER, 1 + n))
    assert len(_sends_to(fake, GROUP)) == 1  # tried once, not at every poll
    row = _by_id(workspace)[refused["id"]]
    assert reason.lower() in row["error"].lower() and row["failed_at"]
    assert _by_id(workspace)[fine["id"]]["status"] == "delivered" and texts(fake)[0] == "⏰ call mum"
    # The owner sees it in /now, with the reason.
    fake.send_message("/now")
    fake.wait_for(lambda: any("not delivered" in t for t in texts(fake)))
    [digest] = [t for t in texts(fake) if "not delivered" in t]
    assert "team standup" in digest and reason.lower() in digest.lower()


def test_a_reminder_that_meets_temporary_errors_is_retried_until_it_arrives(
    fake, start_bot, workspace, caplog, short_send_backoff
):
    import logging

    caplog.set_level(logging.INFO)
    fake.fail_next("sendMessage", status=502, times=5)  # more than one delivery attempt's retries
    ReminderStore(workspace).add(OWNER, "stretch", datetime.now(timezone.utc), "Europe/Berlin")
    start_bot()
    assert fake.wait_for_messages(OWNER, 1)[0]["text"] == "⏰ stretch"
    # Marked delivered right after the send returns: wait for that, not only for the message.
    fake.wait_for(lambda: ReminderStore(workspace).list()[0]["status"] != "pending", timeout=10)
    [row] = ReminderStore(workspace).list()
    assert row["status"] == "delivered" and "error" not in row
    assert [c["status"] for c in fake.calls("sendMessage")] == [502] * 5 + [200]
    # One warning for the reminder, not one per poll; each retry's cause at INFO.
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "reminder" in r.getMessage()]
    assert len(warnings) == 1 and "retrying at each poll" in warnings[0], warnings


# -- Signal ---------------------------------------------------------------------------------------------


def _signal_sends_to(daemon, number: str) -> list[dict]:
    return [c for c in daemon.rpc if c["method"] == "send" and number in (c["params"].get("recipient") or [])]


def test_a_reminder_to_an_unregistered_signal_user_is_marked_failed_and_not_sent_again(start_signal, daemon, workspace):
    daemon.unregistered.add(FRIEND)
    store = ReminderStore(workspace)
    now = datetime.now(timezone.utc)
    refused = store.add(f"sig:{FRIEND}", "bring the book", now - timedelta(seconds=10), "Europe/Berlin")
    start_signal()
    wait_for(lambda: _by_id(workspace)[refused["id"]]["status"] == "failed", what="marked failed")
    _polls_pass(workspace, f"sig:{SIGNAL_OWNER}", lambda n: daemon.wait_sent(n))
    assert len(_signal_sends_to(daemon, FRIEND)) == 1
    assert "UNREGISTERED_FAILURE" in _by_id(workspace)[refused["id"]]["error"]
    assert '"status": "failed"' in workspace.read_text(REMINDERS_FILE)


def test_a_signal_reminder_that_is_rate_limited_is_retried_until_it_arrives(start_signal, daemon, workspace):
    daemon.send_errors.append(RpcError(-5, "Failed to send message due to rate limiting"))
    ReminderStore(workspace).add(f"sig:{SIGNAL_OWNER}", "stretch", datetime.now(timezone.utc), "Europe/Berlin")
    start_signal()
    [sent] = daemon.wait_sent(1)
    assert sent["message"] == "⏰ stretch"
    wait_for(lambda: ReminderStore(workspace).list()[0]["status"] == "delivered", what="delivered mark")


def test_a_tg_prefixed_chat_id_typed_by_hand_is_delivered_and_a_bad_one_marked_failed(fake, start_bot, workspace):
    store = ReminderStore(workspace)
    now = datetime.now(timezone.utc) - timedelta(seconds=5)
    typed = store.add(f"tg:{OWNER}", "stretch", now, "Europe/Berlin")
    bad = store.add("tg:my-phone", "never", now, "Europe/Berlin")
    start_bot()
    assert fake.wait_for_messages(OWNER, 1)[0]["text"] == "⏰ stretch"
    fake.wait_for(lambda: _by_id(workspace)[bad["id"]]["status"] == "failed", timeout=10)
    assert "not a Telegram chat id" in _by_id(workspace)[bad["id"]]["error"]
    fake.wait_for(lambda: _by_id(workspace)[typed["id"]]["status"] == "delivered", timeout=10)
