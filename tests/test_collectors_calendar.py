"""The built-in calendar collector: ICS files with RRULE/EXDATE/TZID, and ICS over real HTTP."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.config.settings import RuntimeSettings, Settings
from assistant_framework.workspace import Workspace
from tests.fakes.feed_server import StaticHTTPServer

FIXTURES = Path(__file__).parent / "fixtures" / "collectors"
BERLIN = ZoneInfo("Europe/Berlin")


def load(ws, **section):
    config = {"runtime": {"timezone": "Europe/Berlin"}, "collectors": {"calendar": {"enabled": True, **section}}}
    manager = CollectorManager.from_settings(Settings.from_config(config).runtime, config.get("collectors"), ws)
    assert "calendar" in manager.collectors, manager.errors
    return manager


def collect_at(manager, ws, when: datetime) -> dict:
    collector = manager.collectors["calendar"]
    return collector.module.collect(ws, collector.config, now=when)


def test_recurrences_exdate_overrides_and_timezones(tmp_path):
    ws = Workspace(tmp_path / "ws")
    manager = load(
        ws, sources=[str(FIXTURES / "work.ics"), {"path": str(FIXTURES / "family.ics"), "name": "Family"}], days=10
    )
    result = collect_at(manager, ws, datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN))
    events = ws.read_json("collectors/calendar/events.json")
    starts = [(e["summary"], e["start"]) for e in events]
    assert starts == [
        ("Team standup", "2025-03-24T09:00:00+01:00"),
        ("Team standup", "2025-03-25T09:00:00+01:00"),
        # 26th: EXDATE; 27th: moved by RECURRENCE-ID.
        ("Team standup (moved)", "2025-03-27T10:30:00+01:00"),
        ("Company holiday", "2025-03-28"),
        ("Team standup", "2025-03-28T09:00:00+01:00"),
        ("Swimming lesson", "2025-03-29T17:00:00+01:00"),
        # After the switch to summer time the standup stays at 09:00 local.
        ("Team standup", "2025-03-31T09:00:00+02:00"),
        # 10:00 in New York (EDT) is 16:00 in Berlin (CEST).
        ("Call with New York office", "2025-03-31T16:00:00+02:00"),
        ("Team standup", "2025-04-01T09:00:00+02:00"),
        ("Team standup", "2025-04-02T09:00:00+02:00"),
    ]
    holiday = next(e for e in events if e["uid"] == "holiday@example.org")
    # An unnamed source is named after its file plus a hash of the whole path (unique).
    assert re.fullmatch(r"work-[0-9a-f]{8}", holiday["calendar"])
    assert holiday == {
        "uid": "holiday@example.org",
        "summary": "Company holiday",
        "start": "2025-03-28",
        "end": "2025-03-29",
        "location": "",
        "all_day": True,
        "calendar": holiday["calendar"],
    }
    assert all(set(e) == {"uid", "summary", "start", "end", "location", "all_day", "calendar"} for e in events)
    md = ws.read_text("collectors/calendar/upcoming.md")
    work = holiday["calendar"]
    assert f"## Fri 2025-03-28\n- all day Company holiday [{work}]\n- 09:00–09:15 Team standup (Room 4) [{work}]" in md
    assert "Long gone" not in md
    assert len(result["new_items"]) == 10 and {i["change"] for i in result["new_items"]} == {"new"}


def test_only_new_or_changed_occurrences_are_reported(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ics = tmp_path / "mine.ics"
    ics.write_bytes((FIXTURES / "work.ics").read_bytes())
    manager = load(ws, sources=[{"path": str(ics), "name": "Work"}], days=10)
    when = datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN)
    collect_at(manager, ws, when)
    assert collect_at(manager, ws, when)["new_items"] == []
    ics.write_bytes(
        ics.read_bytes()
        .replace(b"SUMMARY:Call with New York office", b"SUMMARY:Call with NYC office")
        .replace(
            b"LOCATION:Room 4\nDTSTART;TZID=Europe/Berlin:20250327",
            b"LOCATION:Room 5\nDTSTART;TZID=Europe/Berlin:20250327",
        )
    )
    changed = collect_at(manager, ws, when)["new_items"]
    assert sorted((i["title"], i["change"]) for i in changed) == [
        ("Call with NYC office", "changed"),
        ("Team standup (moved)", "changed"),
    ]


def test_failing_source_keeps_its_events_and_all_failing_is_an_error(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ics = tmp_path / "family.ics"
    ics.write_bytes((FIXTURES / "family.ics").read_bytes())
    manager = load(ws, sources=[str(FIXTURES / "work.ics"), {"path": str(ics), "name": "Family"}], days=10)
    when = datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN)
    collect_at(manager, ws, when)
    ics.write_text("this is not a calendar")
    result = collect_at(manager, ws, when)
    assert any("family.ics" in e for e in result["errors"])
    assert result["new_items"] == []
    assert "Swimming lesson" in [e["summary"] for e in ws.read_json("collectors/calendar/events.json")]

    only_bad = load(Workspace(tmp_path / "ws2"), sources=[str(tmp_path / "missing.ics")])
    runner = CollectorRunner(only_bad, only_bad.workspace, timezone="Europe/Berlin")
    outcome = runner.run_once("calendar")
    assert outcome.outcome == "error" and "missing.ics" in outcome.error


def test_ics_over_http_through_the_runner(tmp_path):
    today = datetime.now(BERLIN).date()
    start = today + timedelta(days=2)
    ics = (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:dentist@example.org\r\n"
        "DTSTAMP:20250101T000000Z\r\nSUMMARY:Dentist\r\nLOCATION:Main St 5\r\n"
        f"DTSTART;TZID=Europe/Berlin:{start.strftime('%Y%m%d')}T080000\r\n"
        f"DTEND;TZID=Europe/Berlin:{start.strftime('%Y%m%d')}T083000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    pushed = []
    with StaticHTTPServer() as server:
        server.add("/cal.ics", ics, content_type="text/calendar")
        ws = Workspace(tmp_path / "ws")
        manager = load(
            ws,
            sources=[{"url": server.url("/cal.ics"), "name": "Personal"}],
            notify=[{"match": "keyword", "value": "dentist"}],
        )
        runner = CollectorRunner(manager, ws, timezone="Europe/Berlin", notify=lambda n, t: pushed.append(t))
        outcome = runner.run_once("calendar")
    assert outcome.outcome == "ok", outcome.error
    events = ws.read_json("collectors/calendar/events.json")
    assert events == [
        {
            "uid": "dentist@example.org",
            "summary": "Dentist",
            "start": f"{start.isoformat()}T08:00:00{_offset(start)}",
            "end": f"{start.isoformat()}T08:30:00{_offset(start)}",
            "location": "Main St 5",
            "all_day": False,
            "calendar": "Personal",
        }
    ]
    assert sorted(outcome.written) == [
        "collectors/calendar/events.json",
        "collectors/calendar/sources/Personal.json",
        "collectors/calendar/upcoming.md",
    ]
    assert pushed == ["calendar: 1 new matching item\n- Dentist"]


def _offset(day) -> str:
    off = datetime(day.year, day.month, day.day, 8, tzinfo=BERLIN).strftime("%z")
    return off[:3] + ":" + off[3:]


def test_source_config_needs_url_or_path(tmp_path):
    manager = CollectorManager.from_settings(
        RuntimeSettings(), {"calendar": {"enabled": True, "sources": [{"name": "x"}]}}, Workspace(tmp_path / "ws")
    )
    assert "collectors.calendar.sources[0]" in {e.name: e.error for e in manager.errors}["calendar"]


CANCELLED_ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//Google Inc//Google Calendar 70.9054//EN
BEGIN:VEVENT
UID:weekly-sync@google.com
DTSTART;TZID=Europe/Berlin:20250317T100000
DTEND;TZID=Europe/Berlin:20250317T110000
RRULE:FREQ=WEEKLY;BYDAY=MO
SUMMARY:Weekly sync
STATUS:CONFIRMED
END:VEVENT
BEGIN:VEVENT
UID:weekly-sync@google.com
RECURRENCE-ID;TZID=Europe/Berlin:20250324T100000
DTSTART;TZID=Europe/Berlin:20250324T100000
DTEND;TZID=Europe/Berlin:20250324T110000
SUMMARY:Weekly sync
STATUS:CANCELLED
END:VEVENT
BEGIN:VEVENT
UID:lunch@example.org
DTSTART:20250325T110000Z
DTEND:20250325T120000Z
SUMMARY:Lunch with Bob
STATUS:CANCELLED
END:VEVENT
BEGIN:VEVENT
UID:dentist@example.org
DTSTART:20250326T080000Z
DTEND:20250326T083000Z
SUMMARY:Dentist
STATUS:TENTATIVE
END:VEVENT
END:VCALENDAR
""".replace("\n", "\r\n")


def test_cancelled_events_and_occurrences_are_not_listed(tmp_path):
    """Google and Outlook publish a cancelled meeting, or one cancelled occurrence of a series,
    as an event with STATUS:CANCELLED: it must not show as upcoming."""
    with StaticHTTPServer() as server:
        server.add("/basic.ics", CANCELLED_ICS, content_type="text/calendar; charset=UTF-8")
        ws = Workspace(tmp_path / "ws")
        manager = load(ws, sources=[{"url": server.url("/basic.ics"), "name": "Work"}], days=10)
        collect_at(manager, ws, datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN))
    events = [(e["summary"], e["start"]) for e in ws.read_json("collectors/calendar/events.json")]
    assert events == [("Dentist", "2025-03-26T09:00:00+01:00"), ("Weekly sync", "2025-03-31T10:00:00+02:00")]
    assert "Lunch with Bob" not in ws.read_text("collectors/calendar/upcoming.md")


def _ics(*events: str) -> str:
    return "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" + "".join(events) + "END:VCALENDAR\r\n"


def _vevent(uid: str, summary: str, start: str, end: str, status: str = "CONFIRMED") -> str:
    return (
        f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20250101T000000Z\r\nSUMMARY:{summary}\r\nSTATUS:{status}\r\n"
        f"DTSTART;TZID=Europe/Berlin:{start}\r\nDTEND;TZID=Europe/Berlin:{end}\r\nEND:VEVENT\r\n"
    )


def test_a_cancelled_deleted_or_moved_event_is_reported_once(tmp_path):
    """The owner was told of the dentist: when it is cancelled, deleted or moved, they hear of that too;
    an event that simply passed, or one of a source that failed this run, is not reported."""
    ws = Workspace(tmp_path / "ws")
    ics = tmp_path / "mine.ics"
    other = tmp_path / "other.ics"
    dentist = ("dentist@x", "Dentist", "20250326T090000", "20250326T093000")
    lunch = ("lunch@x", "Lunch with Bob", "20250327T120000", "20250327T130000")
    review = ("review@x", "Design review", "20250328T140000", "20250328T150000")
    early = ("early@x", "Early call", "20250324T070000", "20250324T073000")
    ics.write_text(_ics(*(_vevent(*e) for e in (dentist, lunch, review, early))))
    other.write_text(_ics(_vevent("yoga@x", "Yoga", "20250326T180000", "20250326T190000")))
    manager = load(ws, sources=[{"path": str(ics), "name": "Mine"}, {"path": str(other), "name": "Other"}], days=10)
    collect_at(manager, ws, datetime(2025, 3, 24, 6, 0, tzinfo=BERLIN))

    ics.write_text(
        _ics(
            _vevent(*dentist, status="CANCELLED"),  # cancelled
            _vevent("review@x", "Design review", "20250331T140000", "20250331T150000"),  # moved
            _vevent(*early),
        )
    )  # lunch deleted; the early call is over by now
    other.write_text("not a calendar any more")  # failed: its yoga class is kept, not "cancelled"
    result = collect_at(manager, ws, datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN))
    got = sorted((i["change"], i["title"], i.get("was", "")) for i in result["new_items"])
    assert got == [
        ("cancelled", "cancelled: Dentist", ""),
        ("cancelled", "cancelled: Lunch with Bob", ""),
        ("moved", "moved: Design review", "2025-03-28T14:00:00+01:00"),
    ]
    assert "Yoga" in ws.read_text("collectors/calendar/upcoming.md")
    assert collect_at(manager, ws, datetime(2025, 3, 24, 8, 5, tzinfo=BERLIN))["new_items"] == []  # once


def test_a_shorter_window_is_not_a_cancellation(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ics = tmp_path / "mine.ics"
    ics.write_text(_ics(_vevent("far@x", "Far away", "20250402T090000", "20250402T100000")))
    collect_at(
        load(ws, sources=[{"path": str(ics), "name": "Mine"}], days=14), ws, datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN)
    )
    shorter = collect_at(
        load(ws, sources=[{"path": str(ics), "name": "Mine"}], days=3), ws, datetime(2025, 3, 24, 8, 0, tzinfo=BERLIN)
    )
    assert shorter["new_items"] == []


def test_a_cancelled_occurrence_of_a_series_is_not_taken_for_a_move_when_the_next_one_comes_into_view(tmp_path):
    """Weekly sync, window of 10 days: the next morning one occurrence is cancelled and, as the window
    moved on by a day, the next occurrence comes into view. That is a cancellation and a new event,
    not "moved" from the cancelled one to a date ten days ahead."""
    ws = Workspace(tmp_path / "ws")
    ics = tmp_path / "mine.ics"
    series = (
        "BEGIN:VEVENT\r\nUID:sync@x\r\nDTSTAMP:20250101T000000Z\r\nSUMMARY:Weekly sync\r\n"
        "DTSTART;TZID=Europe/Berlin:20250317T100000\r\nDTEND;TZID=Europe/Berlin:20250317T110000\r\n"
        "RRULE:FREQ=WEEKLY;BYDAY=MO\r\nEND:VEVENT\r\n"
    )
    ics.write_text(_ics(series))
    manager = load(ws, sources=[{"path": str(ics), "name": "Mine"}], days=10)
    collect_at(manager, ws, datetime(2025, 3, 21, 8, 0, tzinfo=BERLIN))  # window to 31 Mar 00:00: only Mon 24
    cancelled = (
        "BEGIN:VEVENT\r\nUID:sync@x\r\nDTSTAMP:20250101T000000Z\r\nSUMMARY:Weekly sync\r\nSTATUS:CANCELLED\r\n"
        "RECURRENCE-ID;TZID=Europe/Berlin:20250324T100000\r\n"
        "DTSTART;TZID=Europe/Berlin:20250324T100000\r\nDTEND;TZID=Europe/Berlin:20250324T110000\r\nEND:VEVENT\r\n"
    )
    ics.write_text(_ics(series, cancelled))
    result = collect_at(manager, ws, datetime(2025, 3, 22, 8, 0, tzinfo=BERLIN))  # window to 1 Apr: Mon 31 in view
    got = sorted((i["change"], i["start"][:10]) for i in result["new_items"])
    assert got == [("cancelled", "2025-03-24"), ("new", "2025-03-31")], got
