"""The /now digest is built from workspace files alone, in the configured timezone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from assistant_framework.stores.people import BirthdayStore
from assistant_framework.stores.reminders import ReminderStore
from assistant_framework.stores.tasks import TaskStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.digest import build_digest

BERLIN = ZoneInfo("Europe/Berlin")


def _ws(tmp_path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    tasks = TaskStore(ws)
    tasks.add("pay rent", due="2025-03-30")
    tasks.add("file taxes", due="2025-03-20")
    tasks.add("later thing", due="2025-04-20")
    tasks.add("no due date")
    BirthdayStore(ws).add("Ada", "1990-04-02")
    BirthdayStore(ws).add("Bob", "05-20")
    reminders = ReminderStore(ws)
    reminders.add(1, "call mum", datetime(2025, 3, 30, 18, 0, tzinfo=BERLIN), "Europe/Berlin")
    reminders.add(1, "next week thing", datetime(2025, 4, 6, 9, 0, tzinfo=BERLIN), "Europe/Berlin")
    ws.write_json(
        "collectors/calendar/events.json",
        [
            {
                "uid": "1",
                "summary": "Dentist",
                "start": "2025-03-30T07:30:00+00:00",
                "end": "2025-03-30T08:00:00+00:00",
                "location": "Main St",
                "all_day": False,
            },
            {"uid": "2", "summary": "Holiday", "start": "2025-03-30", "end": "2025-03-31", "all_day": True},
            {
                "uid": "3",
                "summary": "Tomorrow meeting",
                "start": "2025-03-31T09:00:00+02:00",
                "end": None,
                "all_day": False,
            },
        ],
    )
    ws.write_json("collectors/mail/new.json", [{"id": 1}, {"id": 2}, {"id": 3}])
    ws.write_json("collectors/rss/new.json", [{"id": 1}])
    ws.write_json("collectors/calendar/new.json", [{"id": 1}])
    return ws


def test_digest_lists_todays_items_in_local_time(tmp_path):
    ws = _ws(tmp_path)
    # 07:15 UTC on the day Berlin switched to summer time = 09:15 local
    text = build_digest(ws, datetime(2025, 3, 30, 7, 15, tzinfo=ZoneInfo("UTC")), "Europe/Berlin")
    assert "Sun 30 Mar 2025, 09:15" in text
    assert "pay rent (today)" in text
    assert "file taxes (overdue since 2025-03-20)" in text
    assert "later thing" not in text and "no due date" not in text
    assert "18:00 call mum" in text and "next week thing" not in text
    assert "09:30 Dentist @ Main St" in text  # 07:30 UTC is 09:30 CEST
    assert "all day Holiday" in text
    assert "Tomorrow meeting" not in text
    assert "Ada: Wed 02 Apr (in 3 days)" in text
    assert "Bob" not in text
    assert "mail: 3 new mails" in text and "rss: 1 new feed items" in text
    assert "calendar:" not in text


def test_digest_of_empty_workspace_says_nothing_is_due(tmp_path):
    text = build_digest(Workspace(tmp_path), datetime(2025, 1, 1, 12, tzinfo=ZoneInfo("UTC")), "UTC")
    assert "Nothing due today" in text


def test_damaged_file_shows_a_note_and_the_rest(tmp_path):
    ws = _ws(tmp_path)
    ws.write_text("collectors/calendar/events.json", "[{broken")
    text = build_digest(ws, datetime(2025, 3, 30, 7, 15, tzinfo=ZoneInfo("UTC")), "Europe/Berlin")
    assert "calendar: could not be read" in text
    assert "pay rent (today)" in text


def test_an_event_belongs_to_the_days_its_span_overlaps_end_exclusive(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.write_json(
        "collectors/calendar/events.json",
        [
            {
                "uid": "a",
                "summary": "Late film",
                "start": "2025-03-10T21:00:00+01:00",
                "end": "2025-03-11T00:00:00+01:00",
                "all_day": False,
            },
            {
                "uid": "b",
                "summary": "Night shift",
                "start": "2025-03-10T22:00:00+01:00",
                "end": "2025-03-11T06:00:00+01:00",
                "all_day": False,
            },
            {"uid": "c", "summary": "Trip", "start": "2025-03-09", "end": "2025-03-12", "all_day": True},
        ],
    )
    monday = build_digest(ws, datetime(2025, 3, 10, 8, 0, tzinfo=BERLIN), "Europe/Berlin")
    assert "- 21:00 Late film" in monday and "- 22:00 Night shift" in monday and "- all day Trip" in monday
    tuesday = build_digest(ws, datetime(2025, 3, 11, 8, 0, tzinfo=BERLIN), "Europe/Berlin")
    assert "Late film" not in tuesday
    assert "- until 06:00 Night shift" in tuesday and "- all day Trip" in tuesday
    assert "Trip" not in build_digest(ws, datetime(2025, 3, 12, 8, 0, tzinfo=BERLIN), "Europe/Berlin")


def test_items_saved_from_outside_content_are_flagged(tmp_path):
    # A task or reminder written from a forwarded mail must not read as the owner's own.
    from messaging_llm_bot.conversation.reminders import FROM_OUTSIDE, delivery_text

    ws = _ws(tmp_path)
    TaskStore(ws).add("wire 900 EUR to the new IBAN", due="2025-03-30", untrusted=True)
    reminder = ReminderStore(ws).add(
        1, "confirm the parcel fee", datetime(2025, 3, 30, 17, 0, tzinfo=BERLIN), "Europe/Berlin", untrusted=True
    )
    BirthdayStore(ws).add("Eve", "04-01", untrusted=True)
    text = build_digest(ws, datetime(2025, 3, 30, 7, 15, tzinfo=ZoneInfo("UTC")), "Europe/Berlin")
    assert f"wire 900 EUR to the new IBAN (today) {FROM_OUTSIDE}" in text
    assert f"17:00 confirm the parcel fee {FROM_OUTSIDE}" in text
    assert f"Eve: Tue 01 Apr (in 2 days) {FROM_OUTSIDE}" in text
    assert text.count(FROM_OUTSIDE) == 3  # the owner's own items stay as they were
    assert (
        delivery_text(reminder, datetime(2025, 3, 30, 15, 0, tzinfo=ZoneInfo("UTC")))
        == f"⏰ confirm the parcel fee\n{FROM_OUTSIDE}"
    )


# -- the morning digest's daily schedule (messaging_llm_bot/conversation/jobs.py), with an injected clock ---------

UTC = ZoneInfo("UTC")


class _RecordingJobQueue:
    """The part of a job queue (PTB's JobQueue, AsyncJobQueue) a daily job uses: ``run_once``, recorded."""

    def __init__(self) -> None:
        self.planned: list[tuple[datetime, object]] = []

    def run_once(self, callback, when, data=None, name=None):
        self.planned.append((when, callback))


def test_a_morning_digest_in_the_hour_the_clocks_go_back_is_sent_once():
    # 02:30 in Berlin happens twice on 26 Oct 2025: 00:30 UTC (summer time) and 01:30 UTC (winter time).
    import asyncio
    from datetime import time as dtime
    from datetime import timedelta

    from messaging_llm_bot.conversation.jobs import DailyJob

    clock = [datetime(2025, 10, 25, 12, 0, tzinfo=UTC)]
    sent: list[datetime] = []
    queue = _RecordingJobQueue()

    async def digest(context) -> None:
        sent.append(clock[0])

    DailyJob(queue, digest, dtime(2, 30, tzinfo=BERLIN), "morning-digest", clock=lambda: clock[0]).start()

    async def three_nights() -> None:
        for _ in range(3):
            when, callback = queue.planned[-1]
            clock[0] = when.astimezone(UTC) - timedelta(milliseconds=5)  # a timer may fire a little early
            await callback(None)

    asyncio.run(three_nights())
    early = timedelta(milliseconds=5)
    assert sent == [
        datetime(2025, 10, 26, 0, 30, tzinfo=UTC) - early,  # 02:30 CEST, the first 02:30
        datetime(2025, 10, 27, 1, 30, tzinfo=UTC) - early,  # 02:30 CET, the next day
        datetime(2025, 10, 28, 1, 30, tzinfo=UTC) - early,
    ]


def test_a_start_in_the_repeated_hour_after_the_digest_went_out_waits_for_the_next_day():
    from datetime import time as dtime

    from messaging_llm_bot.conversation.jobs import next_daily

    at = dtime(2, 30, tzinfo=BERLIN)
    before = next_daily(at, datetime(2025, 10, 26, 0, 10, tzinfo=UTC))  # 02:10 CEST: the first 02:30 is ahead
    assert before.astimezone(UTC) == datetime(2025, 10, 26, 0, 30, tzinfo=UTC)
    restart = next_daily(at, datetime(2025, 10, 26, 1, 10, tzinfo=UTC))  # 02:10 CET, the digest went out at 00:30 UTC
    assert restart.astimezone(UTC) == datetime(2025, 10, 27, 1, 30, tzinfo=UTC)
