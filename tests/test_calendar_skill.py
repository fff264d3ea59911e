"""The ``calendar`` skill against a real CalDAV server (Radicale, started here on loopback): through the
real bot (fake Bot API, fake model server) "move my dentist appointment to Friday 10:00" moves the event
to that Friday 10:00 in the owner's zone after the owner approves, and changes nothing when declined; a
guest chat never reaches the calendar. Then the skill's own cases: create, list, delete, DST, errors."""

from __future__ import annotations

import json
import threading
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import icalendar
import pytest

from assistant_framework.skills.loader import load_skill_folder
from assistant_framework.skills.spec import SkillContext
from tests.fakes.caldav_server import CalDAVServer
from tests.fakes.feed_server import StaticHTTPServer
from tests.telegram_harness import OWNER, approval_question, texts

ZONE = "Europe/Berlin"  # the bot's runtime.timezone in tests/conftest.py
SKILL = load_skill_folder(Path(__file__).resolve().parent.parent / "skills" / "calendar")
FRIEND = 42


@pytest.fixture(scope="module")
def radicale(tmp_path_factory):
    with CalDAVServer(tmp_path_factory.mktemp("caldav")) as server:
        yield server


@pytest.fixture
def calendar(radicale):
    """A fresh calendar of its own name for each test: (its display name, its URL)."""
    name = f"Home {uuid.uuid4().hex[:6]}"
    return name, radicale.make_calendar(name)


def stored(radicale, url: str) -> dict[str, datetime]:
    """UID -> DTSTART of every event as the server stores it."""
    found = {}
    for raw in radicale.events(url):
        for event in icalendar.Calendar.from_ical(raw).walk("VEVENT"):
            found[str(event["uid"])] = event.decoded("dtstart")
    return found


def calendar_config(radicale, name: str) -> dict:
    return {"url": radicale.url, "username": radicale.user, "password": "x", "calendar": name}


def next_week(weekday: int, hour: int) -> datetime:
    """A local time next week on ``weekday`` (0 Monday): the bot's clock is the real one."""
    today = datetime.now(ZoneInfo(ZONE)).date()
    monday = today + timedelta(days=7 - today.weekday())
    day = monday + timedelta(days=weekday)
    return datetime(day.year, day.month, day.day, hour, tzinfo=ZoneInfo(ZONE))


def _move_turn(fake, start_bot, chat_server, radicale, calendar, *, yes: bool) -> tuple[str, str, datetime]:
    name, url = calendar
    dentist = next_week(2, 15)  # Wednesday 15:00
    friday = next_week(4, 10)
    radicale.put_event(url, "dentist-1", "Dentist", f"{dentist:%Y%m%dT%H%M%S}", 45, ZONE)
    start_bot(config_patch=lambda c: c.update(calendar=calendar_config(radicale, name)))
    chat_server.enqueue(
        json.dumps({"skill": "calendar", "args": {"action": "list", "title": "dentist"}}),
        json.dumps(
            {"skill": "calendar", "args": {"action": "move", "uid": "dentist-1", "start": f"{friday:%Y-%m-%d} 10:00"}}
        ),
        json.dumps({"reply": "Done with the dentist."}),
    )
    fake.send_message("move my dentist appointment to Friday 10:00")
    message, buttons = approval_question(fake)
    assert "calendar" in message["text"] and "dentist-1" in message["text"]
    assert stored(radicale, url)["dentist-1"] == dentist  # nothing moves before the answer
    fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":yes" if yes else ":no")), message["message_id"])
    fake.wait_for(lambda: any("Done with the dentist." in t for t in texts(fake)), timeout=30)
    return name, url, dentist


def test_the_owner_approves_and_the_dentist_moves_to_friday_in_the_owners_zone(
    fake, start_bot, chat_server, radicale, calendar
):
    _, url, _ = _move_turn(fake, start_bot, chat_server, radicale, calendar, yes=True)
    moved = stored(radicale, url)["dentist-1"]
    assert moved == next_week(4, 10)
    assert moved.tzinfo is not None and str(moved.tzinfo) == ZONE  # written with the owner's TZID
    listed = next(m for m in chat_server.chat_requests if "Dentist" in json.dumps(m["messages"][-1]))
    assert "[outside content]" in json.dumps(listed["messages"][-1])  # what made the move ask


def test_declined_the_dentist_stays_where_it_was(fake, start_bot, chat_server, radicale, calendar, workspace):
    _, url, dentist = _move_turn(fake, start_bot, chat_server, radicale, calendar, yes=False)
    assert stored(radicale, url) == {"dentist-1": dentist}
    # The owner's no is kept for the message (a replay after a kill is refused unasked), no change begun.
    changes = [(row["kind"], row["target"], row["status"]) for row in workspace.read_jsonl("calendar/changes.jsonl")]
    assert changes == [("move", "dentist-1", "declined")]


def test_a_guest_chat_never_reaches_the_calendar(fake, start_bot, chat_server, radicale, calendar):
    """Even with ``calendar`` among the guest skills, a guest turn is refused and the server is untouched."""
    name, url = calendar
    radicale.put_event(url, "dentist-1", "Dentist", "20270106T150000", 45, ZONE)

    def patch(config):
        config["calendar"] = calendar_config(radicale, name)
        config["policy"] = {"guest_skills": ["calendar"], "capabilities": {"delete": "allow"}}

    start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, config_patch=patch)
    chat_server.enqueue(
        json.dumps({"skill": "calendar", "args": {"action": "delete", "uid": "dentist-1"}}),
        json.dumps({"reply": "guest answered"}),
    )
    fake.send_message("delete the dentist", user_id=FRIEND)
    fake.wait_for(lambda: any("guest answered" in t for t in texts(fake, FRIEND)), timeout=20)
    fed = json.dumps(chat_server.chat_requests[-1]["messages"][-1])
    assert "only in the owner's own chat" in fed
    assert list(stored(radicale, url)) == ["dentist-1"]


# -- the skill on its own: the owner's context, a fixed clock ---------------------------------


def owner_context(radicale, name: str, now: datetime, **overrides) -> SkillContext:
    config = {"calendar": {**calendar_config(radicale, name), **overrides}, "runtime": {"timezone": ZONE}}
    return SkillContext(config=config, timezone=ZONE, services={"clock": lambda: now})


NOW = datetime(2026, 3, 23, 9, 0, tzinfo=timezone.utc)


def test_create_list_and_delete_across_the_spring_forward_night(radicale, calendar, workspace):
    name, url = calendar
    context = owner_context(radicale, name, NOW)
    # 2026-03-29: Berlin goes from +01:00 to +02:00 at 02:00.
    before = SKILL.run(workspace, {"action": "create", "title": "Choir", "start": "2026-03-28 19:00"}, context)
    after = SKILL.run(
        workspace, {"action": "create", "title": "Run", "start": "2026-03-30 07:00", "minutes": 30}, context
    )
    assert "Sat 2026-03-28 19:00" in before and "Mon 2026-03-30 07:00, 30 min" in after
    starts = {str(v.astimezone(timezone.utc)) for v in stored(radicale, url).values()}
    assert starts == {"2026-03-28 18:00:00+00:00", "2026-03-30 05:00:00+00:00"}
    listed = SKILL.run(workspace, {"action": "list"}, context)
    assert listed.index("Choir") < listed.index("Run") and "2026-03-30 07:00, 30 min: Run" in listed
    uid = after.rsplit("uid ", 1)[1]
    assert "deleted 'Run'" in SKILL.run(workspace, {"action": "delete", "uid": uid}, context)
    assert len(stored(radicale, url)) == 1


def test_a_time_the_clocks_skip_is_refused_and_nothing_is_written(radicale, calendar, workspace):
    name, url = calendar
    with pytest.raises(ValueError, match="does not exist in Europe/Berlin"):
        SKILL.run(
            None, {"action": "create", "title": "x", "start": "2026-03-29 02:30"}, owner_context(radicale, name, NOW)
        )
    assert stored(radicale, url) == {}


def test_a_move_keeps_the_length_and_a_repeating_series_is_refused(radicale, calendar, workspace):
    name, url = calendar
    context = owner_context(radicale, name, NOW)
    radicale.put_event(url, "walk", "Walk", "20260324T080000", 90, ZONE)
    said = SKILL.run(workspace, {"action": "move", "uid": "walk", "start": "2026-03-31 09:00"}, context)
    assert "from Tue 2026-03-24 08:00 to Tue 2026-03-31 09:00" in said
    listed = SKILL.run(workspace, {"action": "list", "title": "walk"}, context)
    assert "Tue 2026-03-31 09:00, 90 min: Walk" in listed
    with pytest.raises(ValueError, match="no event with uid 'nope'"):
        SKILL.run(workspace, {"action": "delete", "uid": "nope"}, context)


def test_bad_setup_is_one_sentence(radicale, calendar, tmp_path, workspace):
    name, _ = calendar
    with pytest.raises(ValueError, match="not set up"):
        SKILL.run(workspace, {"action": "list"}, SkillContext(config={}, timezone=ZONE))
    with pytest.raises(ValueError, match="no calendar named 'Nope'"):
        SKILL.run(workspace, {"action": "list"}, owner_context(radicale, name, NOW, calendar="Nope"))
    with pytest.raises(ValueError, match="only in the owner's own chat"):
        SKILL.run(workspace, {"action": "list"}, SkillContext(config={}, private=False))
    with pytest.raises(ValueError, match="YYYY-MM-DD HH:MM"):
        SKILL.run(workspace, {"action": "create", "title": "x", "start": "Friday"}, owner_context(radicale, name, NOW))


def test_a_change_run_again_for_the_same_message_is_not_made_twice(radicale, calendar, workspace):
    """The turn run again after a crash right after the server call asks for the same change: the ledger
    (calendar/changes.jsonl) says it was made, and the server is not asked again; a later message may."""
    name, url = calendar
    context = owner_context(radicale, name, NOW)
    context.conversation_id, context.message_id = "tg:1", 41
    create = {"action": "create", "title": "Piano", "start": "2026-03-26 17:00"}
    first = SKILL.run(workspace, create, context)
    again = SKILL.run(workspace, create, context)
    assert again.startswith("not done again: this create was made at") and first in again
    assert len(stored(radicale, url)) == 1
    uid = first.rsplit("uid ", 1)[1]
    move = {"action": "move", "uid": uid, "start": "2026-03-27 18:00"}
    SKILL.run(workspace, move, context)
    radicale.put_event(url, uid, "Piano", "20260326T170000", 60, ZONE)  # moved back by hand since
    assert "not done again" in SKILL.run(workspace, move, context)
    assert stored(radicale, url)[uid].hour == 17  # the repeated move did not touch it
    delete = {"action": "delete", "uid": uid}
    SKILL.run(workspace, delete, context)
    assert "not done again" in SKILL.run(workspace, delete, context) and stored(radicale, url) == {}
    context.message_id = 42  # the owner asks again in a new message: a new change
    SKILL.run(workspace, create, context)
    assert len(stored(radicale, url)) == 1


def test_a_replayed_change_in_other_words_is_not_made_again(radicale, calendar, workspace):
    """The turn run again after a crash (a new run of the same message) asks for the same changes worded
    otherwise, as a sampling model does: the create with another title (the turn's first create), the move of
    the same event to another time. Nothing reaches the server; the model is told what was done."""
    name, url = calendar
    radicale.put_event(url, "piano", "Piano", "20260326T170000", 60, ZONE)

    def turn_run():
        context = owner_context(radicale, name, NOW)
        context.conversation_id, context.message_id = "tg:1", 51
        return context

    first = turn_run()
    SKILL.run(workspace, {"action": "create", "title": "Dentist", "start": "2026-03-25 15:00"}, first)
    SKILL.run(workspace, {"action": "move", "uid": "piano", "start": "2026-03-27 18:00"}, first)
    replay = turn_run()
    created = SKILL.run(
        workspace, {"action": "create", "title": "Dentist (Dr. Kurz)", "start": "2026-03-25 15:00"}, replay
    )
    moved = SKILL.run(workspace, {"action": "move", "uid": "piano", "start": "2026-03-27 19:00", "minutes": 30}, replay)
    assert created.startswith("not done again: this create was made at") and "'Dentist'" in created
    assert moved.startswith("not done again: this move was made at") and "not in this call's words" in moved
    events = stored(radicale, url)
    assert len(events) == 2 and events["piano"].hour == 18


def test_a_change_the_server_refused_may_be_tried_again(radicale, calendar, workspace):
    name, url = calendar
    context = owner_context(radicale, name, NOW)
    context.message_id = 7
    with pytest.raises(ValueError, match="no event with uid 'gone'"):
        SKILL.run(workspace, {"action": "delete", "uid": "gone"}, context)
    radicale.put_event(url, "gone", "Gone", "20260326T170000", 60, ZONE)
    assert "deleted 'Gone'" in SKILL.run(workspace, {"action": "delete", "uid": "gone"}, context)
    statuses = [row["status"] for row in workspace.read_jsonl("calendar/changes.jsonl")]
    assert statuses == ["begun", "failed", "begun", "done"]


# -- a server that drips: the whole call ends at calendar.timeout_seconds -----------------------


def test_a_calendar_server_that_drips_is_cut_at_the_timeout_in_one_sentence(workspace):
    """A server that sends a byte now and then never trips a per-read timeout: the skill's call to it ends at
    ``calendar.timeout_seconds`` all the same (a header line a byte at a time; a body a byte at a time), and
    the model (and so the user) gets one sentence, not a traceback."""
    with StaticHTTPServer() as server:
        server.add("/head/", b"", content_type="application/xml", drip_head=0.05)
        server.add("/body/", b"<?xml version='1.0'?>" + b" " * 5000, content_type="application/xml", drip=0.05)
        for path in ("/head/", "/body/"):
            config = {"calendar": {"url": server.url(path), "timeout_seconds": 1}, "runtime": {"timezone": ZONE}}
            context = SkillContext(config=config, timezone=ZONE, services={"clock": lambda: NOW})
            outcome: list[BaseException] = []
            call = threading.Thread(target=_run_catching, args=(workspace, context, outcome), daemon=True)
            call.start()
            call.join(30)  # a guard against a hang only: the drip alone would last 500 s / 250 s
            assert not call.is_alive(), f"{path}: the call outlasted its 1 s by far"
            assert len(outcome) == 1 and isinstance(outcome[0], ValueError), (path, outcome)
            assert str(outcome[0]) == (
                "the calendar server did not finish answering within 1 s (calendar.timeout_seconds); "
                "nothing more was asked of it"
            )
            assert [r.method for r in server.requests_to(path)] == ["PROPFIND"]


def _run_catching(workspace, context: SkillContext, outcome: list[BaseException]) -> None:
    try:
        SKILL.run(workspace, {"action": "list"}, context)
    except BaseException as exc:  # noqa: BLE001 - the test reads it
        outcome.append(exc)
