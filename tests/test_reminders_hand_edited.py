"""Reminders whose file the owner edited by hand, delivered by the real Signal frontend (FakeSignalDaemon)."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta, timezone

from assistant_framework.stores.reminders import REMINDERS_FILE, ReminderStore
from tests.signal_harness import OWNER, wait_for
from tests.waiting import more_reminder_polls


def row(rid: str, text: str, due: datetime, **extra) -> dict:
    return {
        "id": rid,
        "chat_id": f"sig:{OWNER}",
        "text": text,
        "due_at": due.isoformat(timespec="seconds"),
        "timezone": "Europe/Berlin",
        "created_at": due.isoformat(timespec="seconds"),
        "status": "pending",
        "delivered_at": None,
        **extra,
    }


def test_a_copied_row_with_the_same_id_is_delivered_once_not_every_poll(start, daemon, workspace):
    # The owner copied a line to make a second reminder and left its id as it was.
    now = datetime.now(timezone.utc)
    workspace.write_json(
        REMINDERS_FILE,
        [row("r1", "call the dentist", now - timedelta(minutes=1)), row("r1", "buy stamps", now - timedelta(hours=3))],
    )
    bot = start()
    wait_for(lambda: not ReminderStore(workspace).pending(), what="both delivered")
    more_reminder_polls(bot.service.runtime, 2)  # more polls: none sends it again
    sent = [s["message"] for s in daemon.sent]
    assert len(sent) == 2 and sent[0].startswith("⏰ buy stamps\n(late: was due") and sent[1] == "⏰ call the dentist"


def test_a_copied_row_due_later_does_not_hold_back_the_one_due_now(start, daemon, workspace):
    now = datetime.now(timezone.utc)
    workspace.write_json(
        REMINDERS_FILE,
        [
            row("r1", "take the pills", now - timedelta(minutes=1)),
            row("r1", "water the plants", now + timedelta(hours=1)),
        ],
    )
    start()
    [sent] = daemon.wait_sent(1)
    assert sent["message"] == "⏰ take the pills"
    wait_for(
        lambda: [r["text"] for r in ReminderStore(workspace).pending()] == ["water the plants"],
        what="only the later one pending",
    )


def test_a_row_written_without_an_utc_offset_is_in_the_digest_and_the_terminal_chat(workspace):
    # "2025-03-30 18:30" typed by hand: the Telegram and Signal schedulers read it in the row's time zone;
    # /now and the terminal chat did not see it at all.
    import asyncio
    from zoneinfo import ZoneInfo

    from messaging_llm_bot.conversation.digest import build_digest
    from messaging_llm_bot.conversation.reminders import ReminderScheduler

    workspace.write_json(
        REMINDERS_FILE,
        [
            {
                **row("r7", "feed the cat", datetime(2025, 3, 30, tzinfo=timezone.utc)),
                "chat_id": "console",
                "due_at": "2025-03-30 18:30",
            }
        ],
    )
    morning = datetime(2025, 3, 30, 9, 15, tzinfo=ZoneInfo("Europe/Berlin"))
    assert "18:30 feed the cat" in build_digest(workspace, morning, "Europe/Berlin")
    shown: list[str] = []

    async def show(chat_id: object, text: str, conversation: object = None) -> bool:
        shown.append(text)
        return True

    # The terminal chat's reminders as the process's one scheduler delivers them (conversation/job_router.py).
    terminal = ReminderScheduler(
        ReminderStore(workspace),
        None,
        show,
        default_tz="Europe/Berlin",
        clock=lambda: datetime(2025, 3, 30, 16, 31, tzinfo=timezone.utc),  # 18:31 CEST
        channels=lambda: frozenset({"console"}),
    )
    assert asyncio.run(terminal.deliver("r7")) and shown == ["⏰ feed the cat"]
    assert not ReminderStore(workspace).pending()


def test_a_row_with_an_unreadable_time_is_reported_once_not_at_every_poll(start, daemon, workspace, caplog):
    caplog.set_level(logging.WARNING, logger="messaging_llm_bot.conversation.reminders")
    now = datetime.now(timezone.utc)
    workspace.write_json(
        REMINDERS_FILE,
        [{**row("r1", "dentist", now), "due_at": "tomorrow 9am"}, row("r2", "first", now - timedelta(minutes=1))],
    )
    start()
    daemon.wait_sent(1)
    for n in range(3):  # each is found by a poll of the store, so several polls have passed
        ReminderStore(workspace).add(f"sig:{OWNER}", f"added {n}", datetime.now(timezone.utc), "Europe/Berlin")
        daemon.wait_sent(2 + n)
    warnings = [r.getMessage() for r in caplog.records if "'r1'" in r.getMessage()]
    assert len(warnings) == 1 and "'tomorrow 9am'" in warnings[0], warnings


def test_a_row_that_is_not_an_object_is_skipped_reported_once_and_kept_in_the_file(start, daemon, workspace, caplog):
    # A line typed by hand as a bare string or number used to make the whole file unreadable:
    # nothing was delivered and a warning was logged at every poll.
    caplog.set_level(logging.WARNING)
    now = datetime.now(timezone.utc)
    workspace.write_json(
        REMINDERS_FILE,
        [
            row("r1", "call the dentist", now - timedelta(seconds=20)),
            "buy milk at 5",
            row("r2", "water the plants", now - timedelta(seconds=30)),
            42,
        ],
    )
    start()
    sent = daemon.wait_sent(2)
    assert sorted(s["message"] for s in sent) == ["⏰ call the dentist", "⏰ water the plants"]
    wait_for(lambda: not ReminderStore(workspace).pending(), what="both delivered")
    for n in range(3):  # each is found by a poll of the store, so several polls have passed
        ReminderStore(workspace).add(f"sig:{OWNER}", f"added {n}", datetime.now(timezone.utc), "Europe/Berlin")
        daemon.wait_sent(3 + n)
    wait_for(lambda: not ReminderStore(workspace).pending(), what="all delivered")
    on_disk = json.loads(workspace.read_text(REMINDERS_FILE))
    assert on_disk[1] == "buy milk at 5" and on_disk[3] == 42  # the owner's rows, untouched, in their place
    assert [r["status"] for r in on_disk if isinstance(r, dict)] == ["delivered"] * 5
    reports = [r.getMessage() for r in caplog.records if REMINDERS_FILE in r.getMessage()]
    assert len([m for m in reports if "row 1 " in m]) == 1 and len([m for m in reports if "row 3 " in m]) == 1, reports
    assert len(reports) == 2, reports
