"""Jobs through the real bot process (``python -m messaging_llm_bot``, tests/crash_bot.py): a SIGKILL in the
middle of a job's model call, and runs planned while the bot was down (``catch_up`` once and skip).

"Down across a planned run" is the state the scheduler finds at start: a job whose newest planned run
lies between its last run (``created_at`` here) and now. Durations (2 cores, idle): the kill test about
4 s, the downtime test about 2 s.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from assistant_framework.inbox import Inbox
from assistant_framework.jobs import JOBS_FILE, RUNS_FILE
from assistant_framework.stores.reminders import REMINDERS_FILE, ReminderStore
from assistant_framework.workspace import Workspace
from skills.jobs import ADDED as JOBS_ADDED
from skills.reminders import ADDED
from tests.crash_bot import BotProcess, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.waiting import wait_until

OWNER = 1


@pytest.fixture
def fake():
    with FakeBotAPI() as api:
        yield api


def config_for(tmp_path, bot_config, fake):
    return write_bot_config(
        tmp_path / "config.json",
        bot_config,
        fake,
        runtime={"shutdown_timeout_seconds": 5},
        extra={"jobs": {"poll_seconds": 0.2}},
    )


def ago(**delta: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(**delta)).isoformat(timespec="seconds")


@pytest.mark.timeout(60)
def test_sigkill_during_a_jobs_model_call_delivers_the_reply_once_after_restart(
    tmp_path, bot_config, fake, chat_server
):
    ws = Workspace(tmp_path / "ws")
    # Due 10 s ago: the first look queues it.
    ws.write_json(
        JOBS_FILE,
        [
            {
                "id": "j1",
                "name": "digest",
                "every_minutes": 60,
                "prompt": "Summarise my day",
                "created_at": ago(minutes=60, seconds=10),
            }
        ],
    )
    chat_server.enqueue({"content": json.dumps({"reply": "never sent: killed"}), "delay": 30})
    config = config_for(tmp_path, bot_config, fake)
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
        bot.kill()
    [left] = Inbox(ws).pending()  # the run's item waits for the next start
    assert left.source_id.startswith("job:j1:")
    assert ws.read_jsonl(RUNS_FILE) == [] and sent_texts(fake, OWNER) == []
    chat_server.reset()
    chat_server.set_handler(lambda request: json.dumps({"reply": "Your day: nothing planned."}))
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: len(ws.read_jsonl(RUNS_FILE)) == 1, timeout=15)
        assert bot.terminate() == 0
    assert sent_texts(fake, OWNER) == ["🗓 digest\n\nYour day: nothing planned."]
    assert len(chat_server.chat_requests) == 1  # the replay's one call; the killed one never answered
    line = ws.read_jsonl(RUNS_FILE)[0]
    assert line["outcome"] == "delivered" and line["job"] == "j1" and len(line["message_ids"]) == 1
    assert Inbox(ws).pending() == []


@pytest.mark.timeout(60)
def test_the_bot_down_across_a_planned_run_makes_one_late_run_with_once_and_none_with_skip(
    tmp_path, bot_config, fake, chat_server
):
    ws = Workspace(tmp_path / "ws")
    planned = datetime.now(timezone.utc).replace(second=0, microsecond=0) - timedelta(hours=1)
    daily = f"{planned.minute} {planned.hour} * * *"
    rows = [
        {
            "id": "j1",
            "name": "once",
            "cron": daily,
            "timezone": "UTC",
            "message": "Made up",
            "created_at": ago(hours=2),
        },
        {
            "id": "j2",
            "name": "skip",
            "cron": daily,
            "timezone": "UTC",
            "message": "Never",
            "catch_up": "skip",
            "created_at": ago(hours=2),
        },
    ]
    ws.write_json(JOBS_FILE, rows)
    config = config_for(tmp_path, bot_config, fake)
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: len(ws.read_jsonl(RUNS_FILE)) == 2, timeout=15)
        assert bot.terminate() == 0
    [sent] = sent_texts(fake, OWNER)
    # In the hour after midnight (UTC, the jobs' zone) the planned time was yesterday: the note gives its date too.
    same_day = planned.date() == datetime.now(timezone.utc).date()
    shown = planned.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M")
    assert sent.startswith("🗓 Made up\n(late: planned " + shown + ", run "), sent
    lines = {line["job"]: line for line in ws.read_jsonl(RUNS_FILE)}
    assert lines["j1"]["outcome"] == "delivered" and lines["j1"]["late"] is True
    assert lines["j2"]["outcome"] == "skipped" and lines["j2"]["count"] == 1
    assert lines["j2"]["planned"] == planned.isoformat(timespec="seconds")
    # Both jobs moved on: a restart makes no run again.
    marks = [row["last_planned"] for row in json.loads(ws.read_text(JOBS_FILE))]
    assert marks == [planned.isoformat(timespec="seconds")] * 2
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: "jobs: first look" in bot.run_log(), timeout=15)
        assert bot.terminate() == 0
    assert len(sent_texts(fake, OWNER)) == 1 and len(ws.read_jsonl(RUNS_FILE)) == 2


def test_a_crash_between_queueing_a_run_and_moving_the_job_on_does_not_run_it_twice(tmp_path):
    """The scheduler's look without a bot: the run is accepted into the inbox, then (a crash) the job's
    ``last_planned`` is put back; after a restart (a new Inbox on the same files) the same planned run is
    found due again and refused by the inbox: one item, one run."""
    from assistant_framework.config.settings import Settings
    from messaging_llm_bot.conversation.job_runs import JobRun
    from messaging_llm_bot.conversation.job_scheduler import JobScheduler

    ws = Workspace(tmp_path / "ws")
    ws.write_json(
        JOBS_FILE,
        [{"id": "j1", "name": "m", "every_minutes": 60, "message": "hi", "created_at": ago(minutes=60, seconds=5)}],
    )
    before = ws.read_text(JOBS_FILE)

    def scheduler() -> JobScheduler:
        return JobScheduler(ws, Inbox(ws), None, claim=lambda job: "tg:1", start=lambda item: None, settings=Settings)

    items, _wait = scheduler().look()
    assert len(items) == 1 and JobRun.of(items[0]).job_id == "j1"
    assert '"last_planned"' in ws.read_text(JOBS_FILE)
    ws.write_text(JOBS_FILE, before)  # the crash: the job never moved on
    again, _wait = scheduler().look()
    pending = Inbox(ws).pending()
    assert len(pending) == 1 and [i.item_id for i in again] == [pending[0].item_id]  # offered again, not a second run


@pytest.mark.timeout(90)
def test_the_bot_down_for_days_makes_one_late_run_and_the_missed_reminder_once_each_naming_the_date(
    tmp_path, bot_config, fake, chat_server
):
    ws = Workspace(tmp_path / "ws")
    now = datetime.now(timezone.utc)
    planned = now.replace(second=0, microsecond=0) - timedelta(hours=1)
    # A daily job whose last three planned times passed while the bot was down (made three days ago).
    row = {
        "id": "j1",
        "name": "daily",
        "cron": f"{planned.minute} {planned.hour} * * *",
        "timezone": "UTC",
        "message": "Daily",
        "created_at": ago(days=3, minutes=30),
    }
    ws.write_json(JOBS_FILE, [row])
    due = now - timedelta(days=2)
    ReminderStore(ws).add(OWNER, "pay the rent", due, "Europe/Berlin")
    config = config_for(tmp_path, bot_config, fake)
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: len(sent_texts(fake, OWNER)) == 2 and not ReminderStore(ws).pending(), timeout=15)
        fake.wait_for(lambda: any(line["outcome"] == "delivered" for line in ws.read_jsonl(RUNS_FILE)), timeout=15)
        assert bot.terminate() == 0
    local_due = due.astimezone(ZoneInfo("Europe/Berlin"))
    same_day = planned.date() == datetime.now(timezone.utc).date()
    shown = planned.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M")
    [reminder] = [text for text in sent_texts(fake, OWNER) if text.startswith("⏰")]
    assert reminder == f"⏰ pay the rent\n(late: was due {local_due:%Y-%m-%d %H:%M})"
    [run] = [text for text in sent_texts(fake, OWNER) if text.startswith("🗓")]
    assert run.startswith(f"🗓 Daily\n(late: planned {shown}, run "), run
    lines = ws.read_jsonl(RUNS_FILE)
    assert [(line["outcome"], line.get("count")) for line in lines] == [("skipped", 2), ("delivered", None)]
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:  # a restart makes neither again
        bot.start().wait_ready()
        fake.wait_for(lambda: "jobs: first look" in bot.run_log(), timeout=15)
        assert bot.terminate() == 0
    assert len(sent_texts(fake, OWNER)) == 2 and len(ws.read_jsonl(RUNS_FILE)) == 2


@pytest.mark.timeout(90)
def test_two_bots_started_at_once_on_one_workspace_make_a_due_run_once(tmp_path, bot_config, fake, chat_server):
    ws = Workspace(tmp_path / "ws")
    # Due as both start: an hourly job made an hour ago (a hand row: the first look writes its id in).
    ws.write_json(JOBS_FILE, [{"name": "tea", "every_minutes": 60, "message": "Tea", "created_at": ago(minutes=60)}])
    config = config_for(tmp_path, bot_config, fake)
    with (
        BotProcess(config, ws.root, tmp_path / "first.log") as first,
        BotProcess(config, ws.root, tmp_path / "second.log") as second,
    ):
        first.start()
        second.start()
        fake.wait_for(lambda: len(ws.read_jsonl(RUNS_FILE)) == 1, timeout=30)

        def ended() -> list[BotProcess]:
            return [bot for bot in (first, second) if bot.proc is not None and bot.proc.poll() is not None]

        wait_until(lambda: ended(), timeout=30, what="the second bot refused")
        [refused] = ended()  # the one that did not get the lock ended, with 1, saying why
        assert refused.proc is not None and refused.proc.returncode == 1
        assert "is already running on workspace" in refused.run_log()
        [running] = [bot for bot in (first, second) if bot is not refused]
        assert running.terminate() == 0
    assert sent_texts(fake, OWNER) == ["🗓 Tea"]
    assert [line["outcome"] for line in ws.read_jsonl(RUNS_FILE)] == ["delivered"]


@pytest.mark.timeout(90)
def test_a_reminder_set_in_a_turn_cut_by_a_kill_is_set_once_when_the_turn_runs_again(
    tmp_path, bot_config, fake, chat_server
):
    ws = Workspace(tmp_path / "ws")
    add = {"skill": "reminders", "args": {"action": "add", "text": "call mum", "in_minutes": 10}}
    # The skill runs, then the bot is killed while the model words the answer.
    chat_server.enqueue(json.dumps(add), {"content": json.dumps({"reply": "never sent: killed"}), "delay": 30})
    config = config_for(tmp_path, bot_config, fake)
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.send_message("remind me in 10 minutes to call mum", user_id=OWNER)
        assert chat_server.wait_for_requests(2, timeout=15, path="/chat/completions")
        bot.kill()
    assert [r["text"] for r in ReminderStore(ws).pending()] == ["call mum"]
    chat_server.reset()
    # The turn asked again after the restart: the model asks for the reminder again, in its own words.
    again = {"skill": "reminders", "args": {"action": "add", "text": "Call Mum", "in_minutes": 10}}
    chat_server.enqueue(json.dumps(again), json.dumps({"reply": "Done: in 10 minutes."}))
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: "Done: in 10 minutes." in sent_texts(fake, OWNER), timeout=20)
        assert bot.terminate() == 0
    assert [r["text"] for r in ReminderStore(ws).pending()] == ["call mum"]  # one reminder: it will come once
    said = chat_server.chat_requests[-1]["messages"][-1]["content"]
    assert "not made again" in json.dumps(said), said


@pytest.mark.timeout(90)
def test_a_reminder_whose_add_a_kill_cut_before_the_store_had_it_is_set_when_the_turn_runs_again(
    tmp_path, bot_config, fake, chat_server
):
    """The ledger's "begun" line written, the kill before the reminder store has it: the replay finds no reminder
    for that line and sets it (it counted as made, and the owner's reminder never came), once."""
    ws = Workspace(tmp_path / "ws")
    add = {"skill": "reminders", "args": {"action": "add", "text": "call mum", "in_minutes": 10}}
    chat_server.enqueue(json.dumps(add), json.dumps({"reply": "never sent: killed"}))
    config = config_for(tmp_path, bot_config, fake)
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        # The store's lock held here: the bot's add waits in the store write, after its ledger line.
        with ws.lock(REMINDERS_FILE):
            fake.send_message("remind me in 10 minutes to call mum", user_id=OWNER)
            wait_until(lambda: ws.exists(ADDED) and ws.read_jsonl(ADDED), timeout=15)
            bot.kill()
    assert [row["status"] for row in ws.read_jsonl(ADDED)] == ["begun"] and ReminderStore(ws).pending() == []
    chat_server.reset()
    again = {"skill": "reminders", "args": {"action": "add", "text": "Call Mum", "in_minutes": 10}}
    chat_server.enqueue(json.dumps(again), json.dumps(again), json.dumps({"reply": "Done: in 10 minutes."}))
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: "Done: in 10 minutes." in sent_texts(fake, OWNER), timeout=20)
        assert bot.terminate() == 0
    # Set once: the model's second ask in the same run is answered from the record the first ask made.
    assert [r["text"] for r in ReminderStore(ws).pending()] == ["Call Mum"]


@pytest.mark.timeout(90)
def test_a_job_added_in_a_turn_cut_by_a_kill_is_added_once_when_the_turn_runs_again(
    tmp_path, bot_config, fake, chat_server
):
    ws = Workspace(tmp_path / "ws")
    add = {"skill": "jobs", "args": {"action": "add", "name": "tea", "cron": "0 16 * * *", "message": "Tea time"}}
    chat_server.enqueue(json.dumps(add), {"content": json.dumps({"reply": "never sent: killed"}), "delay": 30})
    config = config_for(tmp_path, bot_config, fake)
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.send_message("every day at 4 tell me it's tea time", user_id=OWNER)
        assert chat_server.wait_for_requests(2, timeout=15, path="/chat/completions")
        bot.kill()
    chat_server.reset()
    again = {"skill": "jobs", "args": {"action": "add", "name": "Tea", "cron": "0 16 * * *", "message": "Tea!"}}
    chat_server.enqueue(json.dumps(again), json.dumps({"reply": "Done: tea at four."}))
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: "Done: tea at four." in sent_texts(fake, OWNER), timeout=20)
        assert bot.terminate() == 0
    assert [row["name"] for row in ws.read_json(JOBS_FILE)] == ["tea"]  # one job: each run comes once


@pytest.mark.timeout(90)
def test_a_job_whose_add_a_kill_cut_before_the_store_had_it_is_added_when_the_turn_runs_again(
    tmp_path, bot_config, fake, chat_server
):
    """As the reminder's above: the job's "begun" line without the job in jobs.json is made when the turn runs again."""
    ws = Workspace(tmp_path / "ws")
    add = {"skill": "jobs", "args": {"action": "add", "name": "tea", "cron": "0 16 * * *", "message": "Tea time"}}
    chat_server.enqueue(json.dumps(add), json.dumps({"reply": "never sent: killed"}))
    config = config_for(tmp_path, bot_config, fake)
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        with ws.lock(JOBS_FILE):
            fake.send_message("every day at 4 tell me it's tea time", user_id=OWNER)
            wait_until(lambda: ws.exists(JOBS_ADDED) and ws.read_jsonl(JOBS_ADDED), timeout=15)
            bot.kill()
    assert [row["status"] for row in ws.read_jsonl(JOBS_ADDED)] == ["begun"] and not ws.exists(JOBS_FILE)
    chat_server.reset()
    again = {"skill": "jobs", "args": {"action": "add", "name": "Tea", "cron": "0 16 * * *", "message": "Tea!"}}
    chat_server.enqueue(json.dumps(again), json.dumps({"reply": "Done: tea at four."}))
    with BotProcess(config, ws.root, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.wait_for(lambda: "Done: tea at four." in sent_texts(fake, OWNER), timeout=20)
        assert bot.terminate() == 0
    assert [row["name"] for row in ws.read_json(JOBS_FILE)] == ["Tea"]
