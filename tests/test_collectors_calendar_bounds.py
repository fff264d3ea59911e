"""Calendar expansion is bounded (issue 26.8): an event repeating every second costs neither minutes nor
gigabytes, and is named in a warning; the calendar's other events are listed. Through ``collectors run``.

Before: one event repeating every second expanded to 86,400 occurrences a day (7 s, 300 MB) and,
once it had started months before, to 1.8 GB.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main

PER_EVENT = 1_000  # collectors/calendar/bounds.py MAX_OCCURRENCES_PER_EVENT
PER_RUN = 10_000  # MAX_OCCURRENCES_PER_RUN
HMS = "BYHOUR=" + ",".join(map(str, range(24))) + ";BYMINUTE=" + ",".join(map(str, range(60)))
EVERY_SECOND = {
    "secondly": "FREQ=SECONDLY",
    "daily, every second by BY* lists": f"FREQ=DAILY;{HMS};BYSECOND=" + ",".join(map(str, range(60))),
    "minutely": "FREQ=MINUTELY",
}


def _event(uid: str, summary: str, start: datetime, rule: str | None = None, seconds: int = 1) -> str:
    lines = [
        "BEGIN:VEVENT",
        f"UID:{uid}",
        f"SUMMARY:{summary}",
        f"DTSTART:{start:%Y%m%dT%H%M%SZ}",
        f"DTEND:{start + timedelta(seconds=seconds):%Y%m%dT%H%M%SZ}",
    ]
    if rule:
        lines.append(f"RRULE:{rule}")
    return "\r\n".join([*lines, "END:VEVENT"])


def _calendar(*events: str) -> bytes:
    return "\r\n".join(
        ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//bounds//EN", *events, "END:VCALENDAR", ""]
    ).encode()


def _run(tmp_path: Path, files: dict[str, bytes], capsys, days: int = 2) -> tuple[int, str, list[dict]]:
    sources = []
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        sources.append({"path": str(tmp_path / name), "name": name.split(".")[0]})
    config = tmp_path / "config"
    (config / "collectors").mkdir(parents=True, exist_ok=True)
    (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
    # Memory off: what a run writes is not handed to the memory index (its own tests), which was most of the
    # 10,000 occurrences' cost here; the expansion and its bounds are the collector's, run as `collectors run`.
    (config / "memory.json").write_text(json.dumps({"enabled": False}))
    (config / "collectors" / "calendar.json").write_text(
        json.dumps({"enabled": True, "sources": sources, "days": days})
    )
    ws = Workspace(tmp_path / "ws")
    code = main(["collectors", "run", "calendar", "--config", str(config), "--workspace", str(ws.root)])
    out = capsys.readouterr().out
    return code, out, ws.read_json("collectors/calendar/events.json", default=[])


def _today(hour: int = 6) -> datetime:
    today = date.today()
    return datetime(today.year, today.month, today.day, hour, tzinfo=timezone.utc)


@pytest.mark.slow(reason="prices a rule repeating every second over months, per rule form (out of make check's tier)")
@pytest.mark.parametrize("rule", list(EVERY_SECOND.values()), ids=list(EVERY_SECOND))
def test_an_event_repeating_every_second_since_months_ago_is_skipped_by_name(tmp_path, capsys, rule):
    months_ago = _today() - timedelta(days=120)
    data = _calendar(
        _event("ping-1", "Ping", months_ago, rule),
        _event("dentist-1", "Dentist", _today(15), seconds=3600),
    )
    code, out, events = _run(tmp_path, {"work.ics": data}, capsys)
    assert code == 0, out
    assert [e["summary"] for e in events] == ["Dentist"]  # the other event is listed, the dense one not at all
    warning = [line for line in out.splitlines() if "ping-1" in line]
    assert len(warning) == 1 and "'Ping'" in warning[0] and "not expanded" in warning[0], out
    assert "1 broken event(s) skipped" in out


def test_one_event_lists_at_most_its_bound_and_is_named(tmp_path, capsys):
    """Starting today, every minute: cheap enough to compute, too many to list."""
    data = _calendar(_event("tick-1", "Tick", _today(0), "FREQ=MINUTELY"), _event("lunch-1", "Lunch", _today(12)))
    code, out, events = _run(tmp_path, {"work.ics": data}, capsys)
    assert code == 0, out
    ticks = [e for e in events if e["uid"] == "tick-1"]
    assert len(ticks) == PER_EVENT and ticks[0]["start"].startswith(f"{_today(0):%Y-%m-%d}T00:00")
    assert any(e["uid"] == "lunch-1" for e in events)
    assert "'Tick' (tick-1) has more occurrences than listed" in out and "1 event(s) not listed in full" in out
    # The series moves five minutes on: the listed thousand's edges change. That is no news of a cut
    # event (no "new" or "cancelled" notice for each tick); a change of the other event still is.
    later = _calendar(
        _event("tick-1", "Tick", _today(0) + timedelta(minutes=5), "FREQ=MINUTELY"),
        _event("lunch-1", "Lunch", _today(13)),
    )
    code, out, _ = _run(tmp_path, {"work.ics": later}, capsys)
    assert code == 0, out
    items = Workspace(tmp_path / "ws").read_json("collectors/calendar/new.json")["items"]
    assert {i["uid"] for i in items} == {"lunch-1"}, items


@pytest.mark.slow(reason="expands 10,000 occurrences, the run's bound itself (out of make check's tier)")
def test_the_whole_run_lists_at_most_its_bound_over_all_sources(tmp_path, capsys):
    """Eleven sources with an event every minute each: 11,000 occurrences would be listed; the run
    stops at its bound, and each source whose events it cut says so."""
    files = {
        f"cal{n}.ics": _calendar(_event(f"tick-{n}", f"Tick {n}", _today(0), "FREQ=MINUTELY;COUNT=1000"))
        for n in range(11)
    }
    code, out, events = _run(tmp_path, files, capsys, days=1)
    assert code == 0, out
    assert len(events) == PER_RUN
    assert "the run's limit of 10,000 occurrences was reached" in out


def test_ordinary_long_running_series_are_expanded_in_full(tmp_path, capsys):
    """The pricing is no false alarm: a birthday since 1850, a weekly class on three days since 2000,
    the last Friday of every month since 1990, a reminder every four hours since 2020."""
    first = (_today(9).replace(day=1) + timedelta(days=32)).replace(day=1)  # next month's 1st (no 29 February)
    data = _calendar(
        _event("birthday", "Birthday", first.replace(year=1850), "FREQ=YEARLY"),
        _event("class", "Class", first.replace(year=2000), "FREQ=WEEKLY;BYDAY=MO,WE,FR"),
        _event("review", "Review", first.replace(year=1990), "FREQ=MONTHLY;BYDAY=-1FR"),
        _event("pills", "Pills", first.replace(year=2020), "FREQ=HOURLY;INTERVAL=4"),
    )
    code, out, events = _run(tmp_path, {"home.ics": data}, capsys, days=60)
    assert code == 0 and "warning" not in out, out
    by_uid: dict[str, int] = {}
    for event in events:
        by_uid[event["uid"]] = by_uid.get(event["uid"], 0) + 1
    assert by_uid["birthday"] == 1 and by_uid["review"] in (1, 2, 3) and 24 <= by_uid["class"] <= 27
    assert by_uid["pills"] == 6 * 60  # today's earlier ones included
