"""Telegram and Signal share one workspace: each frontend replays only its own inbox items and
delivers only the reminders set on it."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

from assistant_framework.inbox import Inbox
from assistant_framework.stores.reminders import ReminderStore
from tests.fakes.signal_daemon import FakeSignalDaemon
from tests.signal_harness import BOT
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.telegram_harness import OWNER, texts
from tests.waiting import more_reminder_polls


def test_telegram_leaves_signal_items_and_reminders_to_signal(fake, start_bot, workspace, chat_server, caplog):
    daemon = FakeSignalDaemon(BOT)
    event = daemon.envelope(SIGNAL_OWNER, "left by a crash")
    Inbox(workspace).accept(f"sig:x:{event['envelope']['timestamp']}", f"sig:{SIGNAL_OWNER}", event)
    due = datetime.now(timezone.utc) - timedelta(seconds=5)
    store = ReminderStore(workspace)
    signal_reminder = store.add(f"sig:{SIGNAL_OWNER}", "signal's reminder", due, "UTC")
    store.add(OWNER, "telegram's reminder", due, "UTC")
    caplog.set_level(logging.INFO)
    bot = start_bot()
    fake.wait_for(lambda: any("telegram's reminder" in t for t in texts(fake)), timeout=10)
    more_reminder_polls(bot.runtime, 2)
    assert [i.conversation_id for i in Inbox(workspace).pending()] == [f"sig:{SIGNAL_OWNER}"]
    assert [r["id"] for r in store.pending()] == [signal_reminder["id"]]
    assert not any("signal's reminder" in t or "re:" in t for t in texts(fake))
    assert chat_server.chat_requests == []
    errors = [r.getMessage() for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    assert errors == []  # Telegram did not try to answer the Signal item as a Telegram update
    # The process's reminder scheduler left Signal's reminder alone: no failed try, no warning.
    tries = [r.getMessage() for r in caplog.records if r.name.endswith("reminders") and r.levelname == "WARNING"]
    assert tries == []
