"""Start-up, shutdown and restarts: reminders, inbox replay after a crash, duplicates, 409, lock, no token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import filelock
import requests

from assistant_framework.inbox import Inbox
from assistant_framework.stores.reminders import ReminderStore
from messaging_llm_bot.channels.telegram import bot as telegram_bot
from messaging_llm_bot.conversation.job_router import JobRouter, job_router
from tests import preload
from tests.telegram_harness import OWNER, busy_queue, texts
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[1]


def _raw_message(update_id: int, message_id: int, text: str, chat_id: int = OWNER) -> dict:
    return {
        "update_id": update_id,
        "message": {
            "message_id": message_id,
            "date": int(time.time()),
            "text": text,
            "chat": {"id": chat_id, "type": "private", "first_name": "Owner"},
            "from": {"id": OWNER, "is_bot": False, "first_name": "Owner", "username": "owner"},
        },
    }


def test_reminders_pending_at_start_are_delivered_and_missed_ones_late(fake, start_bot, workspace):
    store = ReminderStore(workspace)
    now = datetime.now(timezone.utc)
    soon = store.add(OWNER, "stretch", now + timedelta(seconds=2), "Europe/Berlin")
    missed = store.add(OWNER, "take pills", now - timedelta(hours=2), "Europe/Berlin")
    store.add(OWNER, "far future", now + timedelta(days=3), "Europe/Berlin")
    start_bot()
    fake.wait_for_messages(OWNER, 2)
    berlin = ZoneInfo("Europe/Berlin")
    due_local = (now - timedelta(hours=2)).astimezone(berlin)
    # The time alone on the same local day; in the two hours after Berlin's midnight it was due yesterday.
    local_due = due_local.strftime("%H:%M" if due_local.date() == now.astimezone(berlin).date() else "%Y-%m-%d %H:%M")
    # Order-free: a slow start-up may find "stretch" due already; only the missed one is marked late.
    assert sorted(texts(fake)) == sorted([f"⏰ take pills\n(late: was due {local_due})", "⏰ stretch"])
    sent_at = {c["params"]["text"]: c["at"] for c in fake.calls("sendMessage")}
    # Never before it is due, within the scheduler's one-second tolerance (ReminderScheduler.deliver).
    assert sent_at["⏰ stretch"] >= (now + timedelta(seconds=1)).timestamp()
    fake.wait_for(lambda: len(store.pending()) == 1)  # marked after sending
    by_id = {r["id"]: r for r in store.list()}
    assert by_id[soon["id"]]["status"] == "delivered" and by_id[missed["id"]]["status"] == "delivered"
    assert [r["text"] for r in store.pending()] == ["far future"]


def test_reminder_added_while_running_is_picked_up(fake, start_bot, workspace):
    start_bot()  # the harness polls the store every 0.1 s instead of 30 s
    # Due in 0.3 s: still ahead when the next poll (0.1 s) plans it, so it is sent at its time, not at once.
    ReminderStore(workspace).add(OWNER, "new one", datetime.now(timezone.utc) + timedelta(seconds=0.3), "UTC")
    fake.wait_for_messages(OWNER, 1)
    assert texts(fake) == ["⏰ new one"]


def test_crash_left_items_are_answered_at_start_resuming_after_sent_parts(fake, start_bot, chat_server, workspace):
    inbox = Inbox(workspace)
    long_reply = "\n\n".join(f"Section {i} " + "lorem ipsum " * 50 for i in range(12))  # about 7,500 chars
    a = inbox.accept("500", "tg:1", _raw_message(500, 10, "question A"))
    inbox.record_reply(a.item_id, long_reply)
    inbox.record_part(a.item_id, 0, 4242)  # part 1 went out before the crash
    inbox.accept("501", "tg:1", _raw_message(501, 11, "question B"))
    chat_server.enqueue('{"reply": "answer B"}')
    start_bot()
    fake.wait_for_messages(OWNER, 2)
    sent = texts(fake)
    assert sent[0].startswith("Section") and not sent[0].startswith("Section 0 ")  # part 2 only
    assert sent[1] == "answer B"
    assert [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests] == ["question B"]
    fake.wait_for(lambda: not Inbox(workspace).pending())


def _bot_message(fake, chat_id: int, text: str) -> int:
    """A message the bot sent in an earlier run (through the fake's real HTTP API)."""
    url = f"{fake.base_url}{fake.token}/sendMessage"
    return requests.post(url, json={"chat_id": chat_id, "text": text}, timeout=5).json()["result"]["message_id"]


def test_a_crash_after_the_reply_was_stored_finishes_the_streamed_message(fake, start_bot, chat_server, workspace):
    inbox = Inbox(workspace)
    live = _bot_message(fake, OWNER, "the answer is for")  # streamed text when the bot was killed
    item = inbox.accept("600", "tg:1", _raw_message(600, 20, "question"))
    inbox.record_live(item.item_id, live)
    inbox.record_reply(item.item_id, "the answer is forty-two")
    start_bot()
    fake.wait_for(lambda: texts(fake) == ["the answer is forty-two"])  # the same message, finished by an edit
    fake.wait_for(lambda: not workspace.list("state/inbox/pending/*/*.json"))
    assert [m["message_id"] for m in fake.messages(OWNER)] == [live]
    assert chat_server.chat_requests == []  # the stored reply, no new model call


def test_a_crash_while_streaming_takes_over_the_live_message(fake, start_bot, chat_server, workspace):
    inbox = Inbox(workspace)
    live = _bot_message(fake, OWNER, "half an ans ▍")
    item = inbox.accept("601", "tg:1", _raw_message(601, 21, "question"))
    inbox.record_live(item.item_id, live)
    chat_server.enqueue('{"reply": "a whole answer"}')
    start_bot(stream=True)
    fake.wait_for(lambda: not workspace.list("state/inbox/pending/*/*.json"))
    assert texts(fake) == ["a whole answer"]  # the half-done message was finished or removed, not left beside it


def test_update_delivered_twice_is_answered_once_across_restart(fake, start_bot, chat_server, workspace):
    raw = _raw_message(77, 5, "only once please")
    first = start_bot()
    fake.push_update(json.loads(json.dumps(raw)))
    fake.wait_for_messages(OWNER, 1)
    first.stop()
    fake.redeliver(raw)  # Telegram re-sends an update whose confirmation it never got
    fake.push_update(_raw_message(78, 6, "a new one"))
    start_bot()
    fake.wait_for_messages(OWNER, 2)
    assert fake.redelivered(77)  # the second bot really received update 77 again
    # Update 78 comes after 77 in the same batch: once it is answered, 77 was handled (or dropped).
    fake.wait_for(lambda: not workspace.list("state/inbox/pending/*/*.json"))
    asked = [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests]
    assert asked == ["only once please", "a new one"]
    assert len(fake.messages(OWNER)) == 2


def test_reused_update_ids_after_moving_to_another_bot_api_server_are_answered(
    fake, start_bot, chat_server, workspace, caplog
):
    import logging

    from tests.fakes.bot_api import FakeBotAPI

    old = start_bot(config_patch=busy_queue)
    fake.push_update(_raw_message(3, 40, "old question"))
    fake.push_update(_raw_message(90000, 41, "newest on the old server"))
    fake.wait_for_messages(OWNER, 2)
    old.stop()
    caplog.set_level(logging.INFO)
    with FakeBotAPI() as moved:  # e.g. a local Bot API server: its update ids start again
        moved.push_update(_raw_message(3, 42, "hello from the new server"))  # id 3 again, another message
        moved.push_update(_raw_message(4, 43, "and a second one"))
        start_bot(base_url=moved.base_url, base_file_url=moved.base_file_url, config_patch=busy_queue)
        moved.wait_for_messages(OWNER, 2)
        moved.wait_for(lambda: not workspace.list("state/inbox/pending/*/*.json"))
    asked = [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests]
    assert asked == ["old question", "newest on the old server", "hello from the new server", "and a second one"]
    warned = [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "source id 3" in r.getMessage()
    ]
    assert len(warned) == 1 and "highest id seen 90000" in warned[0]


def test_polling_goes_on_after_the_bot_api_failed_with_a_growing_pause(
    fake, start_bot, chat_server, monkeypatch, caplog
):
    """getUpdates answered 502 (an outage at Telegram, a proxy in between): asked again after a pause that grows with
    each failure in a row, one warning each, and the next message is answered."""
    import logging

    monkeypatch.setattr(telegram_bot, "POLL_BACKOFF_FIRST_SECONDS", 0.05)
    caplog.set_level(logging.WARNING)
    start_bot()
    fake.fail_next("getUpdates", status=502, times=3)

    def pauses() -> list[str]:
        return [r.getMessage().rsplit(" in ", 1)[1] for r in caplog.records if "getUpdates failed" in r.getMessage()]

    wait_until(lambda: len(pauses()) == 3, what="three polls failed")
    assert pauses() == ["0.05 s", "0.075 s", "0.113 s"]
    chat_server.enqueue('{"reply": "still here"}')
    fake.send_message("hello")
    fake.wait_for(lambda: texts(fake) == ["still here"])


def test_second_poller_conflict_stops_with_exit_code_1(fake, start_bot, capsys):
    fake.conflict_on_get_updates(True)
    bot = start_bot()
    assert bot.join(20) == 1
    assert "409 Conflict" in capsys.readouterr().err


def test_a_stop_while_the_bot_joins_the_scheduler_leaves_no_scheduler_running(fake, start_bot, monkeypatch):
    """A stop (a 409 Conflict, Ctrl-C) that lands while the bot joins the job scheduler: the join ends in its
    thread all the same, so the stop leaves the scheduler too. Cancelled at that await, the bot forgot it had
    joined: the scheduler's thread ran on, handing job runs to a channel that was gone."""
    attach, entered, stopping, joined = JobRouter.attach, threading.Event(), threading.Event(), threading.Event()

    def attach_once_the_stop_began(router, *args, **kwargs):
        entered.set()
        stopping.wait(10)
        time.sleep(0.2)  # the stop has cancelled the deferred start's wait for this call by now
        try:
            return attach(router, *args, **kwargs)
        finally:
            joined.set()

    monkeypatch.setattr(JobRouter, "attach", attach_once_the_stop_began)
    jobs_threads = [t for t in threading.enumerate() if t.name == "jobs"]
    bot = start_bot(wait_ready=False)
    assert entered.wait(20), "the bot never joined the scheduler"
    stopping.set()
    assert bot.stop() == 0
    assert joined.wait(10)
    wait_until(lambda: job_router(bot.service.runtime).attached_channels() == frozenset(), what="the scheduler left")
    wait_until(
        lambda: [t for t in threading.enumerate() if t.name == "jobs"] == jobs_threads,
        what="the scheduler's thread ended",
    )


def test_a_command_answered_before_a_stop_is_not_run_again_at_the_next_start(fake, start_bot):
    """A stop confirms what the last poll fetched (one more getUpdates with its offset), also when the poll that
    would have confirmed it never got through: a command is not in the inbox, which would know it again, so left
    unconfirmed it would run a second time at the next start."""
    first = start_bot()
    wait_until(lambda: fake.waiting_polls() >= 1, what="a poll waiting for updates")
    held = fake.hold_next("getUpdates")  # the next poll, the one that would confirm /help, stays in the network
    try:
        fake.send_message("/help")
        [help_text] = [m["text"] for m in fake.wait_for_messages(OWNER, 1)]
        assert first.stop() == 0
        start_bot()
        fake.send_message("/skills")  # answered in the chat's order: after a /help delivered again, if it were
        fake.wait_for(lambda: any(text != help_text for text in texts(fake)))
    finally:
        held.set()
    assert texts(fake).count(help_text) == 1


def test_second_bot_on_the_same_workspace_refuses_to_run(fake, start_bot, workspace, capsys):
    held = filelock.FileLock(str(workspace.path("state/bot.lock")))
    held.acquire()
    try:
        bot = start_bot(wait_ready=False)
        assert bot.join(10) == 1
    finally:
        held.release()
    assert "already running" in capsys.readouterr().err
    assert fake.calls() == []


def test_a_stop_asked_while_the_bot_starts_is_kept_until_it_runs(fake, start_bot):
    """stop() while the start waits for the Bot API (deleteWebhook, before the first poll): the stop is kept,
    and the bot stops once it runs, exit 0 (PTB's Application once lost such a stop)."""
    fake.delay_next("deleteWebhook", 0.5)  # the start's last call before the poll
    bot = start_bot(wait_ready=False)
    wait_until(lambda: fake.arrived("deleteWebhook"), what="deleteWebhook under way")
    assert bot.stop(timeout=10) == 0


def test_a_bot_api_slow_to_answer_at_start_is_asked_again(fake, start_bot, monkeypatch, caplog):
    """getMe answered after the read timeout (a slow network; a loaded machine's fake in a whole test run) is
    asked again and the bot serves; it ended with exit 1 at the first timeout."""
    monkeypatch.setattr(telegram_bot, "API_READ_TIMEOUT_SECONDS", 1.0)
    fake.delay_next("getMe", 1.5)
    bot = start_bot()
    assert bot.service.started.is_set(), f"the bot stopped with exit code {bot.join(5)}"
    assert [r.getMessage() for r in caplog.records if "did not answer in time" in r.getMessage()] == [
        "telegram: the Bot API did not answer in time (Timed out); asking again (2 of 3)"
    ]


def test_no_token_exits_2_with_one_clear_line(bot_config, tmp_path):
    config = dict(bot_config, telegram={"token": ""}, memory={"enabled": False})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}
    proc = preload.run(
        [sys.executable, "-m", "messaging_llm_bot", "--config", str(path), "--workspace", str(tmp_path / "ws")],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "token" in lines[0].lower()


def test_morning_digest_is_scheduled_daily_in_local_time(fake, start_bot):
    bot = start_bot(morning_digest="07:30")
    bot.service.started.wait(10)
    # On the process's one scheduler (conversation/job_router.py), planned one run at a time
    # (conversation/jobs.DailyJob; its DST nights in tests/test_digest.py).
    # Planned on the scheduler's own loop once the channel attaches: wait for it.
    due = fake.wait_for(lambda: job_router(bot.service.runtime).digest_due("telegram"))
    local = due.astimezone(ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute) == (7, 30)
    assert timedelta(0) < due - datetime.now(timezone.utc) <= timedelta(hours=25)


def test_collector_notice_reaches_the_allowed_users(fake, start_bot):
    bot = start_bot()
    bot.service.notices.notify_from_thread("rss", "3 new items")  # called from a collector thread
    assert fake.wait_for_messages(OWNER, 1)[0]["text"] == "📬 rss: 3 new items"
