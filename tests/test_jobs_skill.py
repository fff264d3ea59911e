"""The ``jobs`` skill and its files through SkillManager on a real workspace: what a small model is
told when it gets a call wrong, the limits, the guest refusal, and rows edited by hand."""

from __future__ import annotations

import json
from dataclasses import replace

from assistant_framework.jobs import JOBS_FILE, JobStore
from assistant_framework.skills import SkillContext, SkillManager
from assistant_framework.stores.reminders import ReminderStore
from assistant_framework.workspace import Workspace
from tests.skills_harness import NOW, err, ok


def test_add_answers_with_the_id_and_the_next_run_in_local_time(manager: SkillManager, ctx: SkillContext) -> None:
    added = ok(manager, "jobs", {"action": "add", "name": "bins", "cron": "0 19 * * 0", "message": "Bins out"}, ctx)
    # NOW is Friday 28 March 2025 10:00 Berlin; the next Sunday 19:00 is after the clocks went forward.
    assert added.startswith("job j1 'bins' added") and "next run 2025-03-30 19:00 CEST" in added
    rows = ok(manager, "jobs", {"action": "list"}, ctx)
    assert rows[0]["id"] == "j1" and rows[0]["next_run"] == "2025-03-30T19:00:00+02:00"


def test_errors_say_the_form_and_give_an_example(manager: SkillManager, ctx: SkillContext) -> None:
    none = err(manager, "jobs", {"action": "add", "name": "x", "message": "hi"}, ctx)
    assert "exactly one schedule" in none and '"30 7 * * 1-5"' in none and "every_minutes" in none
    two = err(
        manager, "jobs", {"action": "add", "name": "x", "cron": "0 7 * * *", "every_minutes": 5, "message": "m"}, ctx
    )
    assert "got cron and every_minutes" in two
    bad_cron = err(manager, "jobs", {"action": "add", "name": "x", "cron": "7:30 daily", "message": "m"}, ctx)
    assert "five fields" in bad_cron and '"30 7 * * 1-5"' in bad_cron
    payload = err(manager, "jobs", {"action": "add", "name": "x", "every_minutes": 60}, ctx)
    assert "exactly one of message or prompt" in payload and "e.g." in payload
    zone = err(
        manager, "jobs", {"action": "add", "name": "x", "every_minutes": 60, "message": "m", "timezone": "Berlin"}, ctx
    )
    assert "IANA" in zone and "Europe/Berlin" in zone
    missing = err(manager, "jobs", {"action": "pause", "id": "j9"}, ctx)
    assert "no job 'j9'" in missing
    assert JobStore(Workspace(manager.workspace.root)).rows() == []


def test_a_prompt_job_more_often_than_the_minimum_is_refused(manager: SkillManager, ctx: SkillContext) -> None:
    refused = err(manager, "jobs", {"action": "add", "name": "p", "every_minutes": 5, "prompt": "news?"}, ctx)
    assert "at most every 15 minutes" in refused and "jobs.min_prompt_interval_minutes" in refused
    cron = err(manager, "jobs", {"action": "add", "name": "p", "cron": "*/5 * * * *", "prompt": "news?"}, ctx)
    assert "every 5 minute(s)" in cron
    # A message job costs no model call: any interval.
    assert ok(manager, "jobs", {"action": "add", "name": "m", "every_minutes": 1, "message": "tick"}, ctx)


def test_max_jobs_is_a_limit(manager: SkillManager, ctx: SkillContext) -> None:
    limited = replace(ctx, settings=replace(ctx.settings, jobs=replace(ctx.settings.jobs, max_jobs=1)))
    ok(manager, "jobs", {"action": "add", "name": "a", "every_minutes": 60, "message": "a"}, limited)
    refused = err(manager, "jobs", {"action": "add", "name": "b", "every_minutes": 60, "message": "b"}, limited)
    assert "jobs.max_jobs" in refused


def test_a_guest_chat_cannot_make_or_see_jobs(manager: SkillManager, ctx: SkillContext) -> None:
    guest = replace(ctx, private=False)
    refused = err(manager, "jobs", {"action": "add", "name": "x", "every_minutes": 60, "message": "m"}, guest)
    assert "belong to the owner" in refused
    assert "belong to the owner" in err(manager, "jobs", {"action": "list"}, guest)


def test_pause_resume_update_run_now_and_remove(manager: SkillManager, ctx: SkillContext) -> None:
    ok(manager, "jobs", {"action": "add", "name": "Rent", "cron": "0 9 1 * *", "message": "Pay the rent"}, ctx)
    assert "paused" in ok(manager, "jobs", {"action": "pause", "id": "rent"}, ctx)  # by name, any case
    assert ok(manager, "jobs", {"action": "list"}, ctx)[0]["next_run"] is None
    assert "next run 2025-04-01 09:00" in ok(manager, "jobs", {"action": "resume", "id": "j1"}, ctx)
    updated = ok(manager, "jobs", {"action": "update", "id": "j1", "every_minutes": 120}, ctx)
    assert "every 120 minutes" in updated
    row = JobStore(Workspace(manager.workspace.root)).rows()[0]
    assert "cron" not in row and row["every_minutes"] == 120
    assert "will run" in ok(manager, "jobs", {"action": "run_now", "id": "j1"}, ctx)
    assert JobStore(Workspace(manager.workspace.root)).rows()[0]["run_requested"].startswith("2025-03-28T10:00")
    assert "removed" in ok(manager, "jobs", {"action": "remove", "id": "j1"}, ctx)
    assert ok(manager, "jobs", {"action": "list"}, ctx) == "no jobs yet"


def test_a_broken_row_costs_only_itself(manager: SkillManager, ctx: SkillContext, ws: Workspace) -> None:
    ws.write_text(
        JOBS_FILE,
        json.dumps(
            [
                {"id": "j1", "name": "good", "every_minutes": 30, "message": "ok"},
                {"id": "j2", "name": "two payloads", "every_minutes": 30, "message": "a", "prompt": "b"},
                "a line typed by mistake",
                {"id": "j3", "name": "bad cron", "cron": "every day", "message": "c"},
            ]
        ),
    )
    rows = ok(manager, "jobs", {"action": "list"}, ctx)
    assert [row.get("id") for row in rows if "id" in row] == ["j1"]
    broken = [row["broken_row"] for row in rows if "broken_row" in row]
    assert (
        len(broken) == 2
        and "(j2 'two payloads')" in broken[0]
        and "(j3 'bad cron')" in broken[1]
        and "five fields" in broken[1]
    )
    # Adding keeps every row as it was, the unreadable ones too.
    ok(manager, "jobs", {"action": "add", "name": "new", "every_minutes": 60, "message": "n"}, ctx)
    data = json.loads(ws.read_text(JOBS_FILE))
    assert data[2] == "a line typed by mistake" and [row.get("id") for row in data if isinstance(row, dict)] == [
        "j1",
        "j2",
        "j3",
        "j4",
    ]


def test_at_is_local_time_and_must_be_a_real_date(manager: SkillManager, ctx: SkillContext) -> None:
    added = ok(manager, "jobs", {"action": "add", "name": "x", "at": "2025-03-30 02:30", "message": "m"}, ctx)
    assert "next run 2025-03-30 03:30 CEST" in added  # inside the DST gap: the first moment after it
    bad = err(manager, "jobs", {"action": "add", "name": "y", "at": "2025-02-30 10:00", "message": "m"}, ctx)
    assert "YYYY-MM-DD HH:MM" in bad and "2026-12-24 09:00" in bad
    assert NOW.tzinfo is not None


def test_an_add_the_turns_message_made_before_is_known_so_nobody_is_asked_and_none_is_made(
    manager: SkillManager, ctx: SkillContext
) -> None:
    """The turn run again after a crash (a new run of the turn, the same message): its reminder and its job are
    made before, so the gate asks the owner nothing (``done_before``) and the call makes none (``made_once``)."""
    first = replace(ctx, message_id=7)
    add_job = {"action": "add", "name": "bins", "cron": "0 19 * * 0", "message": "Bins out"}
    add_reminder = {"action": "add", "text": "call mum", "in_minutes": 10}
    skills = {name: manager.skills[name] for name in ("jobs", "reminders")}
    workspace = Workspace(manager.workspace.root)
    for name, args in (("jobs", add_job), ("reminders", add_reminder)):
        assert skills[name].done_before is not None
        assert not skills[name].done_before(workspace, args, first)
        ok(manager, name, args, first)
    replay = replace(ctx, message_id=7, actions=type(ctx.actions)())  # the same message, a new run of the turn
    other = replace(ctx, message_id=8, actions=type(ctx.actions)())  # a later message acts anew
    for name, args in (("jobs", {**add_job, "name": "Bins"}), ("reminders", {**add_reminder, "text": "Call Mum"})):
        assert skills[name].done_before(workspace, args, replay)
        assert not skills[name].done_before(workspace, args, other)
        assert "not made again" in str(ok(manager, name, args, replay))
    assert [row["name"] for row in JobStore(workspace).rows()] == ["bins"]
    assert [r["text"] for r in ReminderStore(workspace).pending()] == ["call mum"]
