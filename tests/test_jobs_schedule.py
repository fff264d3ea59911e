"""When jobs run (assistant_framework/jobs/schedule.py): DST, catch-up after downtime, every_minutes.

The clock is the test's: every moment is an argument, so a day across a DST change is checked in
microseconds, with the real tz database and croniter underneath.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from assistant_framework.jobs.schedule import Schedule, due_runs, shortest_gap

BERLIN = ZoneInfo("Europe/Berlin")
UTC = timezone.utc


def daily_0230() -> Schedule:
    return Schedule("cron", "Europe/Berlin", cron="30 2 * * *")


def runs_between(schedule: Schedule, start: datetime, end: datetime, step: timedelta = timedelta(minutes=5)) -> list:
    """Every run from ``start`` to ``end``, as a scheduler looking every ``step`` of a controlled clock finds them."""
    found, mark, now = [], start, start
    while now <= end:
        due = due_runs(schedule, mark, now, on_time=step)
        found += [planned for planned, _late in due.runs]
        assert all(not late for _planned, late in due.runs)
        mark = due.mark or mark
        now += step
    return found


@pytest.mark.parametrize(
    ("day", "expected_local", "expected_utc"),
    [
        # 29 March 2026: 02:00 CET -> 03:00 CEST; 02:30 does not exist and runs once, when the gap ends.
        ("2026-03-29", "03:00", datetime(2026, 3, 29, 1, 0, tzinfo=UTC)),
        # 25 October 2026: 03:00 CEST -> 02:00 CET; 02:30 happens twice and runs once, at the first.
        ("2026-10-25", "02:30", datetime(2026, 10, 25, 0, 30, tzinfo=UTC)),
    ],
)
def test_a_daily_0230_berlin_job_runs_once_on_each_dst_change(day, expected_local, expected_utc) -> None:
    date = datetime.fromisoformat(day)
    start = datetime(date.year, date.month, date.day, tzinfo=BERLIN) - timedelta(days=1)
    end = start + timedelta(days=3)
    runs = runs_between(daily_0230(), start.astimezone(UTC), end.astimezone(UTC))
    on_the_day = [r for r in runs if r.astimezone(BERLIN).date() == date.date()]
    assert on_the_day == [expected_utc]
    assert on_the_day[0].astimezone(BERLIN).strftime("%H:%M") == expected_local
    # The days around keep 02:30 local: one run each, three in all.
    assert [r.astimezone(BERLIN).strftime("%H:%M") for r in runs] == ["02:30", expected_local, "02:30"]


def test_an_hourly_job_keeps_one_run_per_wall_hour_when_the_clocks_go_back() -> None:
    hourly = Schedule("cron", "Europe/Berlin", cron="0 * * * *")
    start = datetime(2026, 10, 25, 0, 30, tzinfo=BERLIN)
    runs = runs_between(hourly, start.astimezone(UTC), (start + timedelta(hours=5)).astimezone(UTC))
    assert [r.astimezone(BERLIN).strftime("%H:%M%z") for r in runs][:4] == [
        "01:00+0200",
        "02:00+0200",
        "03:00+0100",
        "04:00+0100",
    ]


def test_every_minutes_runs_at_each_minute_from_its_start_once() -> None:
    anchor = datetime(2026, 12, 1, 9, 0, 20, tzinfo=UTC)
    every = Schedule("every", "UTC", minutes=1, anchor=anchor)
    runs = runs_between(every, anchor, anchor + timedelta(minutes=5, seconds=10), step=timedelta(seconds=15))
    assert runs == [anchor + timedelta(minutes=n) for n in range(1, 6)]


def test_catch_up_once_makes_one_late_run_skip_none_all_the_newest_capped() -> None:
    daily = Schedule("cron", "UTC", cron="30 7 * * *")
    last = datetime(2026, 12, 1, 7, 30, tzinfo=UTC)
    back = datetime(2026, 12, 4, 9, 12, tzinfo=UTC)  # down for three planned runs
    once = due_runs(daily, last, back, catch_up="once")
    assert once.runs == [(datetime(2026, 12, 4, 7, 30, tzinfo=UTC), True)]
    assert once.skipped_count == 2 and once.mark == datetime(2026, 12, 4, 7, 30, tzinfo=UTC)
    skip = due_runs(daily, last, back, catch_up="skip")
    assert skip.runs == [] and skip.skipped_count == 3 and skip.mark == once.mark
    capped = due_runs(daily, last, back, catch_up="all", cap=2)
    assert capped.runs == [(datetime(2026, 12, 3, 7, 30, tzinfo=UTC), True), (once.mark, True)]
    assert capped.skipped_count == 1


def test_catch_up_once_is_not_made_when_a_run_is_on_time_now() -> None:
    every = Schedule("every", "UTC", minutes=10, anchor=datetime(2026, 12, 1, 0, 0, tzinfo=UTC))
    due = due_runs(every, datetime(2026, 12, 1, 0, 0, tzinfo=UTC), datetime(2026, 12, 1, 1, 0, 30, tzinfo=UTC))
    assert due.runs == [(datetime(2026, 12, 1, 1, 0, tzinfo=UTC), False)]
    assert due.skipped_count == 5


def test_a_year_of_downtime_of_a_frequent_job_is_counted_without_a_year_of_work() -> None:
    anchor = datetime(2025, 12, 1, tzinfo=UTC)
    every = Schedule("every", "UTC", minutes=2, anchor=anchor)
    back = anchor + timedelta(days=365, seconds=100)  # the newest planned run is 100 s old: missed
    due = due_runs(every, anchor, back, catch_up="skip")
    assert due.runs == [] and due.skipped_count == 365 * 24 * 30
    assert due.mark == anchor + timedelta(days=365)
    once = due_runs(every, anchor, back, catch_up="once")
    assert once.runs == [(anchor + timedelta(days=365), True)] and once.skipped_count == 365 * 24 * 30 - 1


def test_an_at_job_runs_once_and_then_has_no_next_run() -> None:
    at = Schedule("at", "Europe/Berlin", at=datetime(2026, 12, 24, 9, 0, tzinfo=BERLIN))
    planned = at.at.astimezone(UTC)
    assert at.next_after(planned - timedelta(minutes=1)) == planned
    assert at.next_after(planned) is None
    assert due_runs(at, planned - timedelta(hours=1), planned + timedelta(seconds=5)).runs == [(planned, False)]


def test_weekdays_mean_what_cron_means() -> None:
    """``1-5`` is Monday to Friday and 0 and 7 are Sunday (APScheduler 3's from_crontab read 1-5 as Tue-Sat)."""
    sunday = datetime(2026, 11, 29, tzinfo=UTC)
    weekdays = Schedule("cron", "UTC", cron="30 7 * * 1-5")
    days, moment = [], sunday
    for _ in range(6):
        moment = weekdays.next_after(moment)
        days.append(moment.strftime("%a"))
    assert days == ["Mon", "Tue", "Wed", "Thu", "Fri", "Mon"]
    for spelled in ("0 9 * * 0", "0 9 * * 7", "0 9 * * sun"):
        assert Schedule("cron", "UTC", cron=spelled).next_after(sunday).strftime("%a %d") == "Sun 29"


def test_shortest_gap_finds_the_busiest_part_of_a_cron_schedule() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    assert shortest_gap(Schedule("cron", "UTC", cron="0,5 9 * * *"), now) == timedelta(minutes=5)
    assert shortest_gap(Schedule("every", "UTC", minutes=30), now) == timedelta(minutes=30)


def test_a_quarter_hourly_job_runs_once_per_wall_time_when_the_clocks_go_back() -> None:
    """25 October 2026, Berlin: 02:00-02:59 happens twice. A ``*/15`` cron runs 02:00, 02:15, 02:30 and 02:45
    once (the first pass), not again in the second pass: each repeated wall time is one run, as for a daily
    or hourly job (a sub-hourly cron is the case where the second pass has several fire times in a row)."""
    quarter = Schedule("cron", "Europe/Berlin", cron="*/15 * * * *")
    start = datetime(2026, 10, 25, 1, 0, tzinfo=BERLIN)
    end = datetime(2026, 10, 25, 4, 0, tzinfo=BERLIN)
    runs = runs_between(quarter, start.astimezone(UTC), end.astimezone(UTC), step=timedelta(minutes=1))
    walls = [r.astimezone(BERLIN).strftime("%H:%M") for r in runs]
    expected = [f"{hour:02d}:{minute:02d}" for hour in (1, 2, 3, 4) for minute in (0, 15, 30, 45)][1:-3]
    assert walls == expected  # 01:15 ... 04:00, each wall time once
    # Real time between 02:45 (first pass) and 03:00 is 1 h 15 min: the second pass made nothing.
    gap = runs[walls.index("03:00")] - runs[walls.index("02:45")]
    assert gap == timedelta(hours=1, minutes=15)


@pytest.mark.parametrize("catch_up", ["once", "all", "skip"])
def test_a_minute_cron_years_behind_is_planned_in_one_look(catch_up) -> None:
    """A look walks at most a bounded number of runs; past it, it finds the newest runs backwards from now,
    so a row five years behind is caught up in one look with what its catch_up makes (a count of the rest
    that is a floor), not in 26 looks of 100,000 croniter steps each."""
    minute = Schedule("cron", "Europe/Berlin", cron="* * * * *")
    now = datetime(2026, 12, 2, 7, 0, 30, tzinfo=UTC)
    due = due_runs(minute, now - timedelta(days=5 * 365), now, catch_up=catch_up, cap=10)
    assert due.mark == datetime(2026, 12, 2, 7, 0, tzinfo=UTC)  # caught up: the next look starts at now
    assert due.runs[-1] == (datetime(2026, 12, 2, 7, 0, tzinfo=UTC), False)  # this minute's run, on time
    late = [planned for planned, was_late in due.runs if was_late]
    expected_late = {"once": 0, "all": 10, "skip": 0}[catch_up]  # once: a run on time now is the one made
    assert len(late) == expected_late and late == sorted(late)
    if late:
        assert late[-1] == datetime(2026, 12, 2, 6, 58, tzinfo=UTC)  # the newest missed ones (06:59 is on time)
    assert not due.counted_all and due.skipped_count >= 200


def test_runs_jsonl_is_cut_to_its_newest_lines_and_a_run_just_recorded_stays_known(ws) -> None:
    """``jobs/runs.jsonl`` past its size keeps its newest lines (the new one last): a year of 20 runs a day is
    about 1.2 MB, read whole by /now, the Jobs page and each run's once-check; a run recorded just before a cut
    is still known, so a replay after a crash adds no second line."""
    from assistant_framework.jobs.runs import RUNS_CAP, RUNS_FILE, RunLog

    line = '{"run":"job:j1:%06d","job":"j1","name":"water","kind":"message","outcome":"delivered","pad":"%s"}\n'
    count = RUNS_CAP.max_bytes // len(line % (0, "x" * 100)) + 10
    ws.write_text(RUNS_FILE, "".join(line % (n, "x" * 100) for n in range(count)))
    runs = RunLog(ws)
    runs.append({"run": "job:j1:newest", "job": "j1", "outcome": "delivered"})
    assert ws.path(RUNS_FILE).stat().st_size <= RUNS_CAP.max_bytes // 2
    kept = runs.records()
    assert len(kept) <= RUNS_CAP.keep_lines and kept[-1]["run"] == "job:j1:newest"
    assert runs.has_run("job:j1:newest") and runs.has_run(f"job:j1:{count - 1:06d}")
    assert not runs.has_run("job:j1:000000")
