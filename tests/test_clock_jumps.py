"""Scheduled work when the wall clock jumps, through the real Telegram frontend (FakeBotAPI).

A laptop that slept, or an NTP correction, moves the wall clock while the process's timers (asyncio's, on
the monotonic clock, which does not count a suspend) keep their own time. The scheduler's wall clock here is
the test's (``TelegramService.job_clock``: the real time plus an offset the test moves), so a jump is one
``advance``; the timers, the inbox, the reminder store and the Bot API calls are the real ones.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from assistant_framework.jobs import JOBS_FILE, RUNS_FILE, JobStore
from assistant_framework.schedules import to_iso
from assistant_framework.stores.reminders import ReminderStore
from messaging_llm_bot.conversation.job_router import DIGESTS_SENT, job_router
from tests.telegram_harness import OWNER, RunningBot, make_runtime, telegram_config, texts
from tests.test_jobs_bot import Clock, next_look
from tests.waiting import more_reminder_polls, wait_until

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def clock_bot(fake, bot_config, workspace, tmp_path):
    """Factory: the Telegram bot with its scheduler (jobs, reminders, digests) on the test's clock."""
    running: list[RunningBot] = []

    def start(clock: Clock, timezone: str = "Europe/Berlin", **overrides) -> RunningBot:
        config = telegram_config(bot_config, fake, **overrides)
        config["jobs"] = {"poll_seconds": 0.05}
        config["runtime"] = {**config.get("runtime", {}), "timezone": timezone}
        bot = RunningBot(make_runtime(config, workspace, tmp_path))
        bot.service.job_clock = clock
        running.append(bot)
        bot.start()
        # Ready may come a moment before the channel has joined the scheduler (a join in its thread).
        wait_until(lambda: job_router(bot.runtime).reminders is not None, what="the bot joined the scheduler")
        return bot

    yield start
    for bot in running:
        bot.stop()


def reminders(fake, text: str) -> list[str]:
    return [t for t in texts(fake, OWNER) if t.startswith(f"⏰ {text}")]


def water(fake) -> list[str]:
    return [t for t in texts(fake, OWNER) if t.startswith("🗓 Drink water")]


def dentist(fake) -> list[str]:
    return [t for t in texts(fake, OWNER) if t.startswith("🗓 Dentist")]


def iso(moment) -> str:
    return to_iso(moment) or ""


def digests(fake) -> list[str]:
    return [t for t in texts(fake, OWNER) if t.startswith("📋")]


def shown(when: datetime, now: datetime) -> str:
    """A late note's time as the owner reads it in Berlin: the date too when it was another day there (a jump
    across midnight, whatever hour the suite runs at)."""
    local, today = when.astimezone(BERLIN), now.astimezone(BERLIN).date()
    return f"{local:%H:%M}" if local.date() == today else f"{local:%Y-%m-%d %H:%M}"


def test_a_reminder_due_during_a_forward_jump_is_sent_at_once_and_says_it_is_late(fake, clock_bot, workspace):
    # Set for two hours from now; then the laptop sleeps three hours (the wall clock jumps, the timers do not).
    clock = Clock()
    due = clock() + timedelta(hours=2)
    ReminderStore(workspace).add(OWNER, "call the plumber", due, "Europe/Berlin")
    bot = clock_bot(clock)
    more_reminder_polls(bot.runtime, 2)  # planned on its timer (two hours of the monotonic clock)
    assert reminders(fake, "call the plumber") == []
    clock.advance(hours=3)
    fake.wait_for(lambda: reminders(fake, "call the plumber") != [], timeout=10)
    more_reminder_polls(bot.runtime, 3)
    assert reminders(fake, "call the plumber") == [f"⏰ call the plumber\n(late: was due {shown(due, clock())})"]
    assert ReminderStore(workspace).pending() == []


def test_the_morning_digest_due_during_a_forward_jump_is_sent_once_at_once(fake, clock_bot):
    clock = Clock()
    at = (clock() + timedelta(hours=2)).astimezone(BERLIN)
    bot = clock_bot(clock, morning_digest=f"{at:%H:%M}")
    router = job_router(bot.runtime)
    due = fake.wait_for(lambda: router.digest_due("telegram"))
    assert timedelta(hours=1) < due - clock() <= timedelta(hours=2)
    clock.advance(hours=3)
    fake.wait_for(lambda: digests(fake) != [], timeout=10)
    more_reminder_polls(bot.runtime, 3)
    assert len(digests(fake)) == 1
    assert router.digest_due("telegram") == due + timedelta(days=1)  # the next one is tomorrow's, once


def test_a_backward_jump_sends_a_reminder_neither_early_nor_twice(fake, clock_bot, workspace):
    # Set for three seconds ahead and planned; then NTP sets the clock back an hour: at its old time it is early.
    clock = Clock()
    bot = clock_bot(clock)
    due = clock() + timedelta(seconds=3)
    ReminderStore(workspace).add(OWNER, "water the plants", due, "Europe/Berlin")
    more_reminder_polls(bot.runtime, 2)  # planned on its timer
    clock.advance(hours=-1)
    time.sleep(max(0.0, (due - datetime.now(timezone.utc)).total_seconds()) + 0.5)  # past its old time
    more_reminder_polls(bot.runtime, 2)
    assert reminders(fake, "water the plants") == []
    clock.advance(hours=1)
    fake.wait_for(lambda: reminders(fake, "water the plants") != [], timeout=10)
    more_reminder_polls(bot.runtime, 3)
    assert reminders(fake, "water the plants") == ["⏰ water the plants"]


def test_a_job_across_a_forward_then_a_backward_jump_runs_each_planned_time_once(fake, clock_bot, workspace):
    # Hourly, its next run a minute away; the laptop sleeps three hours, then NTP sets the clock back three.
    clock = Clock()
    created = clock() - timedelta(minutes=59)
    workspace.write_json(
        JOBS_FILE,
        [{"id": "j1", "name": "water", "every_minutes": 60, "message": "Drink water", "created_at": iso(created)}],
    )
    bot = clock_bot(clock)
    next_look(bot, fake)
    assert water(fake) == []
    clock.advance(hours=3)  # three planned runs passed while asleep: catch_up once makes the newest, late
    fake.wait_for(lambda: len(water(fake)) == 1, timeout=10)
    assert water(fake)[0].startswith(
        # The run's own time is the process's clock (only the scheduler runs on the test's): the date shows when
        # the planned time was another day than that.
        f"🗓 Drink water\n(late: planned {shown(created + timedelta(hours=3), datetime.now(timezone.utc))}"
    )
    clock.advance(hours=-3)  # back to a minute before the first run: none is made again
    next_look(bot, fake)
    clock.advance(minutes=2)
    next_look(bot, fake, 5)
    assert len(water(fake)) == 1
    clock.advance(hours=3)  # the fourth planned time: on time, once
    fake.wait_for(lambda: len(water(fake)) == 2, timeout=10)
    next_look(bot, fake, 5)
    assert water(fake)[1] == "🗓 Drink water"
    lines = workspace.read_jsonl(RUNS_FILE)
    made = [line["planned"] for line in lines if line["outcome"] == "delivered"]
    assert made == [iso(created + timedelta(hours=3)), iso(created + timedelta(hours=4))]
    assert [line["count"] for line in lines if line["outcome"] == "skipped"] == [2]


def test_a_one_time_job_written_by_hand_runs_once_when_the_time_zone_changes_after(fake, clock_bot, workspace):
    # Written without a zone: runtime.timezone's (Berlin) at its first look. It runs; then the owner moves to
    # New York and restarts the bot: 09:00 there is six hours later, and the job must not run again.
    clock = Clock()
    at = (clock() + timedelta(minutes=2)).astimezone(BERLIN).replace(second=0, microsecond=0)
    workspace.write_json(JOBS_FILE, [{"name": "dentist", "at": f"{at:%Y-%m-%d %H:%M}", "message": "Dentist"}])
    first = clock_bot(clock)
    next_look(first, fake)
    clock.advance(seconds=(at - clock()).total_seconds() + 5)  # its minute, on time
    fake.wait_for(lambda: dentist(fake) != [], timeout=10)
    first.stop()
    second = clock_bot(clock, timezone="America/New_York")
    clock.advance(hours=7)
    next_look(second, fake, 5)
    assert dentist(fake) == ["🗓 Dentist"]
    [row] = workspace.read_json(JOBS_FILE)
    assert row["timezone"] == "Europe/Berlin"  # written in at the first look, with its id and created_at


def test_a_reminder_set_for_in_10_minutes_just_before_a_restart_arrives_once_on_time(
    fake, chat_server, clock_bot, workspace
):
    clock = Clock()
    first = clock_bot(clock)
    add = {"action": "add", "text": "take the cake out", "in_minutes": 10}
    chat_server.enqueue(json.dumps({"skill": "reminders", "args": add}), '{"reply": "In 10 minutes."}')
    fake.send_message("remind me in 10 minutes to take the cake out", user_id=OWNER)
    fake.wait_for(lambda: "In 10 minutes." in texts(fake, OWNER))
    first.stop()  # a restart right after
    clock.advance(minutes=9)
    second = clock_bot(clock)
    more_reminder_polls(second.runtime, 2)
    assert reminders(fake, "take the cake out") == []  # not before its time
    clock.advance(minutes=1, seconds=5)
    fake.wait_for(lambda: reminders(fake, "take the cake out") != [], timeout=10)
    more_reminder_polls(second.runtime, 3)
    assert reminders(fake, "take the cake out") == ["⏰ take the cake out"]  # once, and on time: no late note


def set_clock(clock: Clock, moment: datetime) -> None:
    clock.advance(seconds=(moment - clock()).total_seconds())


@pytest.mark.parametrize(
    ("night", "runs_at"),
    [
        # 29 March 2026: 02:00 CET becomes 03:00 CEST at 01:00 UTC; 02:30 does not exist: once, at 03:00.
        (datetime(2026, 3, 29, tzinfo=timezone.utc), [datetime(2026, 3, 29, 1, 0, tzinfo=timezone.utc)]),
        # 25 October 2026: 03:00 CEST becomes 02:00 CET at 01:00 UTC; 02:30 comes twice: once, the first.
        (datetime(2026, 10, 25, tzinfo=timezone.utc), [datetime(2026, 10, 25, 0, 30, tzinfo=timezone.utc)]),
    ],
    ids=["clocks-forward", "clocks-back"],
)
def test_a_daily_0230_job_and_a_0230_reminder_run_once_on_a_dst_night(night, runs_at, fake, clock_bot, workspace):
    clock = Clock()
    set_clock(clock, night - timedelta(hours=1))  # 00:00 or 01:00 local, the evening before the change
    made = iso(clock())
    workspace.write_json(
        JOBS_FILE,
        [
            {
                "id": "j1",
                "name": "night",
                "cron": "30 2 * * *",
                "timezone": "Europe/Berlin",
                "message": "Night",
                "created_at": made,
            }
        ],
    )
    local_0230 = datetime(night.year, night.month, night.day, 2, 30, tzinfo=BERLIN)  # as the skill reads "02:30"
    ReminderStore(workspace).add(OWNER, "night pill", local_0230, "Europe/Berlin")
    bot = clock_bot(clock)
    for minutes in range(0, 4 * 60, 10):  # the night in ten-minute steps, each looked at
        set_clock(clock, night + timedelta(minutes=minutes))
        next_look(bot, fake)
    more_reminder_polls(bot.runtime, 2)
    assert [t for t in texts(fake, OWNER) if t.startswith("🗓 Night")] == ["🗓 Night"]
    [pill] = reminders(fake, "night pill")  # once (on time or a step late: the steps outrun its timer's wake)
    assert pill.startswith("⏰ night pill")
    lines = workspace.read_jsonl(RUNS_FILE)
    assert [line["planned"] for line in lines] == [iso(moment) for moment in runs_at]


def test_a_morning_digest_missed_while_the_bot_was_down_is_sent_once_at_a_start_later_that_day(
    fake, clock_bot, workspace
):
    clock = Clock()
    today = clock().astimezone(BERLIN).date()
    set_clock(clock, datetime(today.year, today.month, today.day, 10, 0, tzinfo=BERLIN))  # 10:00: 07:30 passed
    yesterday = datetime(today.year, today.month, today.day, 7, 30, tzinfo=BERLIN) - timedelta(days=1)
    workspace.write_json(DIGESTS_SENT, {"telegram": iso(yesterday)})  # yesterday's went out; today's did not
    bot = clock_bot(clock, morning_digest="07:30")
    fake.wait_for(lambda: digests(fake) != [], timeout=10)
    router = job_router(bot.runtime)
    wait_until(lambda: router.digest_due("telegram") == yesterday + timedelta(days=2), what="tomorrow's planned")
    wait_until(lambda: workspace.read_json(DIGESTS_SENT) == {"telegram": iso(yesterday + timedelta(days=1))})
    bot.stop()
    again = clock_bot(clock, morning_digest="07:30")  # a second start that day: sent already
    more_reminder_polls(again.runtime, 3)
    assert len(digests(fake)) == 1


def test_no_digest_is_made_up_at_a_first_start_or_one_before_the_days_time(fake, clock_bot, workspace):
    clock = Clock()
    today = clock().astimezone(BERLIN).date()
    set_clock(clock, datetime(today.year, today.month, today.day, 10, 0, tzinfo=BERLIN))
    first = clock_bot(clock, morning_digest="07:30")  # never sent before: nothing is known to be missed
    more_reminder_polls(first.runtime, 3)
    first.stop()
    set_clock(clock, datetime(today.year, today.month, today.day, 6, 0, tzinfo=BERLIN) + timedelta(days=1))
    workspace.write_json(
        DIGESTS_SENT,
        {"telegram": iso(datetime(today.year, today.month, today.day, 7, 30, tzinfo=BERLIN) - timedelta(days=3))},
    )
    second = clock_bot(clock, morning_digest="07:30")  # 06:00: today's is still to come, older ones are let go
    more_reminder_polls(second.runtime, 3)
    assert digests(fake) == []


def test_a_digest_sent_today_is_not_sent_again_after_a_restart_with_the_clock_set_back(fake, clock_bot, workspace):
    clock = Clock()
    today = clock().astimezone(BERLIN).date()
    sent = datetime(today.year, today.month, today.day, 7, 30, tzinfo=BERLIN)
    workspace.write_json(DIGESTS_SENT, {"telegram": iso(sent)})  # today's went out at 07:30
    set_clock(clock, sent - timedelta(minutes=30))  # then the clock was set back to 07:00, and the bot restarted
    bot = clock_bot(clock, morning_digest="07:30")
    router = job_router(bot.runtime)
    due = fake.wait_for(lambda: router.digest_due("telegram"))
    assert due == sent + timedelta(days=1)


def test_a_daily_job_written_by_hand_keeps_its_zone_when_runtime_timezone_changes(fake, clock_bot, workspace):
    # A daily 07:30 written without a zone is Berlin's at its first look; restarted in New York it stays 07:30
    # Berlin (one run a day at the same instant), not 07:30 in New York, six hours later.
    clock = Clock()
    workspace.write_json(JOBS_FILE, [{"name": "news", "cron": "30 7 * * *", "message": "News"}])
    first = clock_bot(clock)
    next_look(first, fake)
    first.stop()
    second = clock_bot(clock, timezone="America/New_York")
    next_look(second, fake)
    [job] = JobStore(workspace, "America/New_York").jobs()[0]
    assert job.schedule.tz == "Europe/Berlin"
    following = job.next_run(clock())
    assert following is not None and f"{following.astimezone(BERLIN):%H:%M}" == "07:30"
