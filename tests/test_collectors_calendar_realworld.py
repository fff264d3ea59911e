"""Calendar collector on real-world files (tests/fixtures/realworld/calendar, see its README):
one broken event is skipped and reported, its calendar's other events and the other sources are kept."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.config.settings import Settings
from assistant_framework.workspace import Workspace
from tests.fakes.feed_server import StaticHTTPServer

HERE = Path(__file__).parent / "fixtures"
REAL = HERE / "realworld" / "calendar"
BERLIN = ZoneInfo("Europe/Berlin")


def manager_for(ws, **section):
    config = {"runtime": {"timezone": "Europe/Berlin"}, "collectors": {"calendar": {"enabled": True, **section}}}
    manager = CollectorManager.from_settings(Settings.from_config(config).runtime, config.get("collectors"), ws)
    assert "calendar" in manager.collectors, manager.errors
    return manager


def collect_at(manager, ws, when: datetime) -> dict:
    collector = manager.collectors["calendar"]
    return collector.module.collect(ws, collector.config, now=when)


@pytest.mark.slow(reason="expands every broken real-world calendar of the fixtures (out of make check's tier)")
def test_broken_events_are_skipped_with_source_uid_and_reason(tmp_path):
    ws = Workspace(tmp_path / "ws")
    bad = ["pacific_fiji.ics", "issue_464_invalid_rdate.ics", "multiple_timezones.ics"]
    manager = manager_for(
        ws,
        sources=[
            {"path": str(HERE / "collectors" / "work.ics"), "name": "Work"},
            *[{"path": str(REAL / name), "name": name.split(".")[0]} for name in bad],
        ],
        days=10,
    )
    result = collect_at(manager, ws, datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN))
    events = ws.read_json("collectors/calendar/events.json")
    assert [e["summary"] for e in events].count("Team standup") == 6
    # Two DTSTARTs (a list), RDATE with periods, mixed time zones: each named by source and UID.
    for source, uid in [
        ("pacific_fiji", "noend123"),
        ("issue_464_invalid_rdate", "rdate_period"),
        ("multiple_timezones", "test-vtime-utc"),
    ]:
        assert any(e.startswith(f"calendar {source} (") and f"event {uid} skipped: " in e for e in result["errors"]), (
            uid,
            result["errors"],
        )
    assert "broken event(s) skipped" in result["summary"]
    assert result["sources"]["pacific_fiji"]["skipped"][0]["uid"] == "noend123"


def test_a_broken_event_does_not_cost_the_good_one_in_the_same_file(tmp_path):
    # A Google Calendar export: one daily event is fine, the other has an empty EXDATE.
    ws = Workspace(tmp_path / "ws")
    manager = manager_for(ws, sources=[{"path": str(REAL / "parsing_error.ics"), "name": "Google"}], days=30)
    result = collect_at(manager, ws, datetime(2008, 3, 1, 8, 0, tzinfo=BERLIN))
    starts = [e["start"] for e in ws.read_json("collectors/calendar/events.json")]
    # March 3 to 23, EXDATE the 11th: 20 days.
    assert len(starts) == 20 and "2008-03-11" not in starts and starts[0] == "2008-03-03"
    assert any("event (no UID) skipped: " in e and "EXDATE" in e for e in result["errors"])


def test_the_runner_reports_skips_and_writes_the_rest(tmp_path):
    ws = Workspace(tmp_path / "ws")
    manager = manager_for(
        ws, sources=[str(REAL / "pacific_fiji.ics"), str(HERE / "collectors" / "family.ics")], days=366
    )
    outcome = CollectorRunner(manager, ws, timezone="Europe/Berlin").run_once("calendar")
    assert outcome.outcome == "ok", outcome.error
    assert any("noend123" in e for e in ws.read_jsonl("collectors/calendar/runs.jsonl")[-1]["errors"])


def test_two_unnamed_sources_with_the_same_file_name_do_not_duplicate_events(tmp_path):
    ics = (HERE / "collectors" / "family.ics").read_bytes()
    other = (HERE / "collectors" / "work.ics").read_bytes()
    when = datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN)
    with StaticHTTPServer() as server:
        # Every Google Calendar URL ends in basic.ics.
        server.add("/a/private-1/basic.ics", ics, content_type="text/calendar")
        server.add("/b/private-2/basic.ics", other, content_type="text/calendar")
        ws = Workspace(tmp_path / "ws")
        manager = manager_for(
            ws, sources=[server.url("/a/private-1/basic.ics"), server.url("/b/private-2/basic.ics")], days=10
        )
        first = collect_at(manager, ws, when)
        before = ws.read_json("collectors/calendar/events.json")
        assert len({e["calendar"] for e in before}) == 2
        server.add("/b/private-2/basic.ics", b"", status=500)
        second = collect_at(manager, ws, when)
    after = ws.read_json("collectors/calendar/events.json")
    keys = [(e["uid"], e["start"]) for e in after]
    assert len(keys) == len(set(keys))
    assert sorted(keys) == sorted((e["uid"], e["start"]) for e in before)
    assert second["new_items"] == [] and len(first["new_items"]) == len(before)
    assert any("HTTP 500" in e and "private-2" not in e for e in second["errors"])


def _ics(*events: str) -> str:
    body = "".join(
        f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20250101T000000Z\r\nSUMMARY:{summary}\r\nDTSTART;TZID=Europe/Berlin:{start}\r\n"
        f"DTEND;TZID=Europe/Berlin:{end}\r\nEND:VEVENT\r\n"
        for uid, summary, start, end in (e.split("|") for e in events)
    )
    return f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n{body}END:VCALENDAR\r\n"


def test_upcoming_lists_an_event_on_each_day_it_overlaps_end_exclusive(tmp_path):
    ics = tmp_path / "evening.ics"
    ics.write_text(
        _ics("film|Late film|20250324T210000|20250325T000000", "shift|Night shift|20250324T220000|20250325T060000")
    )
    ws = Workspace(tmp_path / "ws")
    manager = manager_for(ws, sources=[{"path": str(ics), "name": "Home"}], days=3)
    collect_at(manager, ws, datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN))
    md = ws.read_text("collectors/calendar/upcoming.md")
    monday, tuesday = md.split("## Tue 2025-03-25")
    assert "- 21:00–24:00 Late film [Home]" in monday and "- 22:00–24:00 Night shift [Home]" in monday
    assert "Late film" not in tuesday and "- 00:00–06:00 Night shift [Home]" in tuesday


def test_a_slow_calendar_server_misses_its_deadline_and_the_others_are_written(tmp_path):
    day = (datetime.now(BERLIN) + timedelta(days=1)).strftime("%Y%m%d")
    good = _ics(f"a|Dentist|{day}T080000|{day}T083000")
    with StaticHTTPServer() as server:
        server.add("/slow.ics", good * 5, content_type="text/calendar", drip=0.05)
        server.add("/good.ics", good, content_type="text/calendar")
        ws = Workspace(tmp_path / "ws")
        manager = manager_for(
            ws,
            sources=[
                {"url": server.url("/slow.ics"), "name": "Slow"},
                {"url": server.url("/good.ics"), "name": "Good"},
            ],
            fetch_timeout_seconds=0.5,
            timeout_seconds=5,
        )
        outcome = CollectorRunner(manager, ws, timezone="Europe/Berlin").run_once("calendar")
    assert outcome.outcome == "ok", outcome.error
    assert [e["calendar"] for e in ws.read_json("collectors/calendar/events.json")] == ["Good"]
    assert any(e.startswith("calendar Slow (") and "not finished within 0.5s" in e for e in outcome.errors)


def test_a_bad_rrule_does_not_drop_the_other_events_of_its_file(tmp_path):
    # The shape of recurring-ical-events' bad_rrule_missing_until_event.ics: a misspelt UNTIL.
    ics = _ics("good-1|Standup|20250324T090000|20250324T091500", "good-2|Lunch|20250325T120000|20250325T130000")
    ics = ics.replace(
        "END:VCALENDAR",
        "BEGIN:VEVENT\r\nUID:bad-rule\r\nSUMMARY:Broken\r\nDTSTART:20250324T100000Z\r\n"
        "RRULE:FREQ=WEEKLY;BYDAY=TH;WKST=SU;UNTL=20191023\r\nEND:VEVENT\r\nEND:VCALENDAR",
    )
    path = tmp_path / "mixed.ics"
    path.write_text(ics)
    ws = Workspace(tmp_path / "ws")
    result = collect_at(
        manager_for(ws, sources=[{"path": str(path), "name": "Mixed"}], days=7),
        ws,
        datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN),
    )
    assert [e["uid"] for e in ws.read_json("collectors/calendar/events.json")] == ["good-1", "good-2"]
    assert [e for e in result["errors"] if "bad-rule" in e][0].startswith("calendar Mixed (")
