"""Every built-in skill exercised through SkillManager.run on a real temporary workspace."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from assistant_framework.skills import BUILTIN_SKILLS_DIR, SkillContext, SkillManager
from assistant_framework.skills.loader import first_fenced_block, readme_sections
from assistant_framework.workspace import Workspace
from tests.skills_harness import NOW, err, ok

MINE = ("birthdays", "contacts", "facts", "file", "learnings", "notes", "reminders", "routines", "tasks", "time")


# -- the surface the model sees ----------------------------------------------------


def test_builtins_load_without_errors(manager: SkillManager) -> None:
    assert manager.errors == []
    assert set(MINE) <= set(manager.names())


@pytest.mark.parametrize(
    "folder", sorted(p for p in BUILTIN_SKILLS_DIR.iterdir() if (p / "__init__.py").is_file()), ids=lambda p: p.name
)
def test_readme_sections_and_schema_match_module(folder: Path, manager: SkillManager) -> None:
    sections = readme_sections((folder / "README.md").read_text(encoding="utf-8"))
    assert {"what it does", "args schema", "examples"} <= set(sections), folder.name
    skill = next(s for s in manager.skills.values() if s.folder == folder.resolve())
    assert json.loads(first_fenced_block(sections["args schema"])) == skill.args_schema


def test_catalog_is_short_and_strict(manager: SkillManager) -> None:
    from messaging_llm_bot.agent.prompt import without_examples  # the schema as the prompt shows it

    entries = [entry for entry in manager.catalog() if entry["name"] in MINE]
    rendered = "\n".join(
        f"{e['name']}: {e['description']} {json.dumps(without_examples(e['args_schema']), separators=(',', ':'))}"
        for e in entries
    )
    # Descriptions say when to use a skill and which neighbour to use instead (issue 32): ~280 more.
    assert len(rendered) < 3800, len(rendered)
    from messaging_llm_bot.agent.prompt import tools_section

    shown = tools_section(manager.catalog(), 100_000)
    assert (
        '"pattern"' in shown and "examples" not in shown and "2026-12-01" not in shown
    )  # examples go into errors only
    for entry in entries:
        assert len(entry["description"]) <= 120 and "\n" not in entry["description"], entry["name"]
        assert entry["args_schema"]["additionalProperties"] is False, entry["name"]
        assert len(entry["args_schema"].get("required", [])) <= 1, entry["name"]


# -- file ------------------------------------------------------------------------------


def test_file_read_write_append_list_delete(manager: SkillManager, ws: Workspace) -> None:
    assert "wrote 5 characters to notes/a.md" == ok(
        manager, "file", {"action": "write", "path": "notes/a.md", "content": "hello"}
    )
    ok(manager, "file", {"action": "append", "path": "notes/a.md", "content": "world"})
    assert (ws.root / "notes/a.md").read_text() == "hello\nworld\n"
    ok(manager, "file", {"action": "write", "path": "notes/b.md", "content": "bee"})
    assert ok(manager, "file", {"action": "read", "path": "notes/a.md"}) == "hello\nworld\n"
    both = ok(manager, "file", {"action": "read", "paths": ["notes/a.md", "notes/b.md", "notes/none.md"]})
    assert (
        both["notes/b.md"] == "bee"
        and both["notes/none.md"].startswith("Error:")
        and "none.md" in both["notes/none.md"]
    )
    assert ok(manager, "file", {"action": "list", "path": "notes"})["files"] == ["notes/a.md", "notes/b.md"]
    ok(manager, "file", {"action": "delete", "paths": ["notes/a.md", "notes/b.md"]})
    assert not (ws.root / "notes/a.md").exists() and not (ws.root / "notes/b.md").exists()
    assert "does not exist" in err(manager, "file", {"action": "read", "path": "notes/a.md"})
    assert "needs path" in err(manager, "file", {"action": "read"})


def test_file_cannot_change_framework_state(manager: SkillManager, ws: Workspace) -> None:
    ws.write_text("state/ledger.json", "{}")
    assert "read-only" in err(manager, "file", {"action": "write", "path": "state/ledger.json", "content": "x"})
    assert "read-only" in err(manager, "file", {"action": "delete", "path": "./memory/index.db"})
    assert "read-only" in err(manager, "file", {"action": "delete", "path": "state"})
    assert ok(manager, "file", {"action": "read", "path": "state/ledger.json"}) == "{}"
    assert (ws.root / "state/ledger.json").read_text() == "{}"


def test_file_refuses_paths_outside_the_workspace(manager: SkillManager, ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (ws.root / "link").symlink_to(outside)
    for path in ("../x", "/etc/passwd", "link/secret.txt", "notes/../../x"):
        error = err(manager, "file", {"action": "read", "path": path})
        assert "WorkspacePathError" in error and "secret" not in error.replace("secret.txt", ""), path
    error = err(manager, "file", {"action": "write", "path": "link/new.txt", "content": "x"})
    assert "WorkspacePathError" in error and not (outside / "new.txt").exists()
    assert "WorkspacePathError" in err(manager, "file", {"action": "write", "path": "../escape.txt", "content": "x"})
    assert not (tmp_path / "escape.txt").exists()
    assert "WorkspacePathError" in err(manager, "file", {"action": "list", "path": "../"})
    mixed = ok(manager, "file", {"action": "read", "paths": ["../x", "/etc/passwd"]})
    assert all(value.startswith("Error:") for value in mixed.values())
    assert (outside / "secret.txt").read_text() == "secret"


# -- learnings, notes -------------------------------------------------------------------


def test_learnings_remember_list_forget(manager: SkillManager, ws: Workspace) -> None:
    assert ok(manager, "learnings", {"action": "remember", "text": "User prefers metric units"}).startswith(
        "saved to learnings/general.md"
    )
    assert ok(manager, "learnings", {"action": "remember", "text": "user prefers  METRIC units"}).startswith(
        "already in"
    )
    ok(manager, "learnings", {"action": "remember", "text": "Salt the pasta water", "topic": "Cooking"})
    assert (ws.root / "learnings/general.md").read_text() == "- User prefers metric units\n"
    assert (ws.root / "learnings/cooking.md").read_text() == "- Salt the pasta water\n"
    assert ok(manager, "learnings", {"action": "list"}) == [
        {"topic": "cooking", "text": "Salt the pasta water"},
        {"topic": "general", "text": "User prefers metric units"},
    ]
    ok(manager, "learnings", {"action": "forget", "text": "metric"})
    assert (ws.root / "learnings/general.md").read_text() == ""
    assert "no learning matches" in err(manager, "learnings", {"action": "forget", "text": "metric"})


def test_learnings_in_a_topic_file_written_by_hand_can_be_listed_extended_and_forgotten(
    manager: SkillManager, ws: Workspace
) -> None:
    # learnings/ is the user's too: a file named "Cooking Tips.md" is not the slug "cooking-tips.md"
    (ws.root / "learnings").mkdir(parents=True, exist_ok=True)
    (ws.root / "learnings/Cooking Tips.md").write_text("- Salt the pasta water\n- Use fresh basil\n")
    assert ok(manager, "learnings", {"action": "list", "topic": "Cooking Tips"}) == [
        {"topic": "Cooking Tips", "text": "Salt the pasta water"},
        {"topic": "Cooking Tips", "text": "Use fresh basil"},
    ]
    assert (
        ok(manager, "learnings", {"action": "forget", "text": "pasta water"})
        == "forgot from learnings/Cooking Tips.md: Salt the pasta water"
    )
    assert (ws.root / "learnings/Cooking Tips.md").read_text() == "- Use fresh basil\n"
    assert ok(
        manager, "learnings", {"action": "remember", "text": "Rest the dough", "topic": "cooking tips"}
    ).startswith("saved to learnings/Cooking Tips.md")
    assert (ws.root / "learnings/Cooking Tips.md").read_text() == "- Use fresh basil\n- Rest the dough\n"
    assert sorted(p.name for p in (ws.root / "learnings").iterdir()) == ["Cooking Tips.md"]


def test_notes_add_search_read(manager: SkillManager, ws: Workspace) -> None:
    assert "notes/wifi-at-the-cabin.md" in ok(
        manager,
        "notes",
        {"action": "add", "title": "Wifi at the cabin", "body": "Network cabin-5G, password on the fridge"},
    )
    ok(manager, "notes", {"action": "add", "title": "Groceries", "body": "Oat milk and bread"})
    assert (ws.root / "notes/wifi-at-the-cabin.md").read_text().startswith("# Wifi at the cabin\n")
    hits = ok(manager, "notes", {"action": "search", "query": "FRIDGE password"})
    assert [h["path"] for h in hits] == ["notes/wifi-at-the-cabin.md"] and "fridge" in hits[0]["snippet"]
    assert [h["title"] for h in ok(manager, "notes", {"action": "search", "query": "milk"})] == ["Groceries"]
    assert "no note matches" in ok(manager, "notes", {"action": "search", "query": "banana"})
    assert ok(manager, "notes", {"action": "read", "title": "groceries"})["body"] == "Oat milk and bread"
    assert len(ok(manager, "notes", {"action": "list"})) == 2


# -- tasks ----------------------------------------------------------------------------


def test_tasks_add_list_complete_delete(manager: SkillManager, ws: Workspace, ctx: SkillContext) -> None:
    assert ok(manager, "tasks", {"action": "add", "title": "Renew passport", "due": "2025-03-27"}, ctx).startswith(
        "added task t1"
    )
    ok(manager, "tasks", {"action": "add", "title": "Buy milk"}, ctx)
    ok(manager, "tasks", {"action": "add", "title": "Dentist", "due": "2025-04-02T09:30"}, ctx)
    bad = manager.run("tasks", {"action": "add", "title": "x", "due": "tomorrow"}, ctx)
    assert bad.error_kind == "invalid_args" and "args.due: 'tomorrow' is not in the expected form" in bad.error
    assert "YYYY-MM-DD" in bad.error and '"2026-12-01"' in bad.error  # a form and an example, not a regex
    assert "not a real calendar date" in err(
        manager, "tasks", {"action": "add", "title": "x", "due": "2025-02-30"}, ctx
    )
    assert [t["title"] for t in ok(manager, "tasks", {"action": "list", "status": "due"}, ctx)] == ["Renew passport"]
    assert len(ok(manager, "tasks", {"action": "list"}, ctx)) == 3
    assert ok(manager, "tasks", {"action": "complete", "title": "passport"}, ctx) == "completed task t1: Renew passport"
    ok(manager, "tasks", {"action": "delete", "title": "t2"}, ctx)
    assert "no open task matches" in err(manager, "tasks", {"action": "complete", "title": "passport"}, ctx)
    stored = json.loads((ws.root / "tasks/tasks.json").read_text())
    assert [t["id"] for t in stored] == ["t1", "t3"]
    done, dentist = stored
    assert done["status"] == "done" and datetime.fromisoformat(done["done_at"]).tzinfo is not None
    assert dentist == {
        **dentist,
        "title": "Dentist",
        "due": "2025-04-02T09:30",
        "status": "open",
        "done_at": None,
        "notes": "",
    }
    assert datetime.fromisoformat(dentist["created_at"]).utcoffset() is not None


# -- contacts, birthdays, routines, facts ---------------------------------------------------


def test_contacts_add_update_find(manager: SkillManager, ws: Workspace) -> None:
    ok(manager, "contacts", {"action": "add", "name": "Anna Berg", "phone": "+49 170 1234567"})
    ok(manager, "contacts", {"action": "add", "name": "Bob Stone", "email": "bob@example.org"})
    assert "already exists" in err(manager, "contacts", {"action": "add", "name": "anna berg"})
    assert (
        ok(manager, "contacts", {"action": "update", "name": "Anna", "email": "anna@example.org"})["phone"]
        == "+49 170 1234567"
    )
    assert [c["name"] for c in ok(manager, "contacts", {"action": "find", "query": "EXAMPLE.org"})] == [
        "Anna Berg",
        "Bob Stone",
    ]
    assert "no contact matches" in ok(manager, "contacts", {"action": "find", "query": "carol"})
    stored = json.loads((ws.root / "contacts/contacts.json").read_text())
    assert stored[0] == {"name": "Anna Berg", "phone": "+49 170 1234567", "email": "anna@example.org", "notes": ""}


def test_birthdays_add_update_find_upcoming(manager: SkillManager, ws: Workspace, ctx: SkillContext) -> None:
    ok(manager, "birthdays", {"action": "add", "name": "Anna", "date": "1990-04-02"}, ctx)
    ok(manager, "birthdays", {"action": "add", "name": "Bob", "date": "03-28", "notes": "likes jazz"}, ctx)
    ok(manager, "birthdays", {"action": "add", "name": "Carl", "date": "12-24"}, ctx)
    assert "not a real calendar date" in err(
        manager, "birthdays", {"action": "add", "name": "Dora", "date": "02-30"}, ctx
    )
    assert (
        manager.run("birthdays", {"action": "add", "name": "Eve", "date": "2 April"}, ctx).error_kind == "invalid_args"
    )
    upcoming = ok(manager, "birthdays", {"action": "upcoming", "days": 10}, ctx)
    assert upcoming == [
        {"name": "Bob", "date": "2025-03-28", "in_days": 0, "notes": "likes jazz"},
        {"name": "Anna", "date": "2025-04-02", "in_days": 5, "turns": 35},
    ]
    ok(manager, "birthdays", {"action": "update", "name": "carl", "date": "12-25"}, ctx)
    assert ok(manager, "birthdays", {"action": "find", "name": "car"}, ctx) == [
        {"name": "Carl", "date": "12-25", "notes": ""}
    ]
    assert [b["name"] for b in json.loads((ws.root / "birthdays/birthdays.json").read_text())] == [
        "Anna",
        "Bob",
        "Carl",
    ]


def test_routines_set_list_delete(manager: SkillManager, ws: Workspace) -> None:
    assert "added routine 'Morning'" in ok(
        manager, "routines", {"action": "set", "name": "Morning", "when": "weekdays 7:00", "steps": "water, stretch"}
    )
    assert "updated routine" in ok(
        manager, "routines", {"action": "set", "name": "morning", "steps": "water, stretch, tasks"}
    )
    assert ok(manager, "routines", {"action": "list"}) == [
        {"name": "Morning", "when": "weekdays 7:00", "steps": "water, stretch, tasks"}
    ]
    assert json.loads((ws.root / "routines/routines.json").read_text())[0]["steps"] == "water, stretch, tasks"
    ok(manager, "routines", {"action": "delete", "name": "Morning"})
    assert ok(manager, "routines", {"action": "list"}) == "no routines yet"


def test_facts_add_supersede_lookup(manager: SkillManager, ws: Workspace, ctx: SkillContext) -> None:
    assert ok(
        manager, "facts", {"action": "add", "subject": "Anna", "attribute": "city", "value": "Berlin"}, ctx
    ).startswith("added fact f1")
    assert ok(
        manager, "facts", {"action": "add", "subject": "anna", "attribute": "City", "value": " berlin "}, ctx
    ).startswith("already known (f1)")
    assert ok(
        manager, "facts", {"action": "add", "subject": "Anna", "attribute": "city", "value": "Hamburg"}, ctx
    ).startswith("superseded fact f2")
    current = ok(manager, "facts", {"action": "lookup", "subject": "anna"}, ctx)
    assert [(f["id"], f["value"]) for f in current] == [("f2", "Hamburg")]
    assert manager.run("facts", {"action": "lookup", "history": True}, ctx).error_kind == "invalid_args"
    stored = json.loads((ws.root / "facts/facts.json").read_text())
    assert stored[0]["superseded_by"] == "f2" and stored[1]["source"] == "skill" and stored[1]["source_ref"] == "tg:42"


def test_facts_list_and_forget(manager: SkillManager, ws: Workspace, ctx: SkillContext) -> None:
    assert ok(manager, "facts", {"action": "list"}, ctx) == "no facts stored"
    ok(manager, "facts", {"action": "add", "subject": "Anna", "attribute": "city", "value": "Berlin"}, ctx)
    ok(
        manager, "facts", {"action": "add", "subject": "Anna", "attribute": "city", "value": "Hamburg"}, ctx
    )  # f2 supersedes f1
    ok(manager, "facts", {"action": "add", "subject": "Ben", "attribute": "allergy", "value": "nuts"}, ctx)
    assert [(f["id"], f["value"]) for f in ok(manager, "facts", {"action": "list"}, ctx)] == [
        ("f2", "Hamburg"),
        ("f3", "nuts"),
    ]
    assert [f["id"] for f in ok(manager, "facts", {"action": "list", "subject": "ben"}, ctx)] == ["f3"]
    assert ok(manager, "facts", {"action": "forget", "id": "f2"}, ctx) == (
        "forgot fact f2: Anna / city = Hamburg and 1 older value(s) (removed from facts/facts.json)"
    )
    assert [f["id"] for f in json.loads((ws.root / "facts/facts.json").read_text())] == ["f3"]  # Berlin is gone too
    assert "no fact with id 'f9'" in err(manager, "facts", {"action": "forget", "id": "f9"}, ctx)
    assert "id" in err(manager, "facts", {"action": "forget"}, ctx)


def test_forgetting_a_fact_is_a_delete_for_the_policy() -> None:
    from types import SimpleNamespace

    from messaging_llm_bot.agent.guard import capabilities_for

    facts = SimpleNamespace(name="facts", capabilities=["read", "write", "delete"], action_capabilities={})
    assert capabilities_for(facts, {"action": "forget", "id": "f1"}) == ["delete"]
    assert capabilities_for(facts, {"action": "list"}) == ["read"]


# -- reminders ---------------------------------------------------------------------------


def test_reminders_add_list_cancel(manager: SkillManager, ws: Workspace, ctx: SkillContext) -> None:
    assert ok(manager, "reminders", {"action": "add", "text": "Call mum", "at": "2025-03-28 18:30"}, ctx).startswith(
        "reminder r1 set for 2025-03-28 18:30 Europe/Berlin"
    )
    ok(manager, "reminders", {"action": "add", "text": "Pizza out", "in_minutes": 12}, ctx)
    # 02:30 on 30 March does not exist in Berlin (clocks jump 02:00 -> 03:00).
    ok(manager, "reminders", {"action": "add", "text": "After the jump", "at": "2025-03-30 02:30"}, ctx)
    assert "at least 1" in err(manager, "reminders", {"action": "add", "text": "x", "in_minutes": -5}, ctx)
    # The two date-time forms small models mix up: both skills take a space or a "T" between.
    assert ok(manager, "reminders", {"action": "add", "text": "T form", "at": "2025-03-28T19:00"}, ctx).startswith(
        "reminder r4 set for 2025-03-28 19:00 Europe/Berlin"
    )
    assert "due 2025-04-01T09:30" in ok(
        manager, "tasks", {"action": "add", "title": "space form", "due": "2025-04-01 09:30"}, ctx
    )
    ok(manager, "reminders", {"action": "cancel", "id": "r4"}, ctx)
    # A huge number (a small model's typo) is a clear error for the model, not an OverflowError.
    assert "over ten years" in err(manager, "reminders", {"action": "add", "text": "x", "in_minutes": 10**12}, ctx)
    assert "outside the calendar" in err(manager, "time", {"action": "add", "days": 10**9}, ctx)
    assert "between 0 and 366" in err(manager, "birthdays", {"action": "upcoming", "days": 10**9}, ctx)
    assert "in the past" in err(manager, "reminders", {"action": "add", "text": "late", "at": "2025-03-28 09:00"}, ctx)
    assert "exactly one of" in err(manager, "reminders", {"action": "add", "text": "x"}, ctx)
    assert "chat" in err(manager, "reminders", {"action": "add", "text": "x", "in_minutes": 5}, SkillContext())
    listed = ok(manager, "reminders", {"action": "list"}, ctx)
    assert [r["id"] for r in listed] == ["r2", "r1", "r3"]
    stored = {r["id"]: r for r in json.loads((ws.root / "reminders/reminders.json").read_text())}
    assert stored["r1"]["due_at"] == "2025-03-28T18:30:00+01:00"
    assert stored["r2"]["due_at"] == "2025-03-28T10:12:00+01:00"
    assert stored["r3"]["due_at"] == "2025-03-30T03:30:00+02:00"
    assert len(stored["r1"]["once_key"]) == 32  # its record in state/reminders-added.jsonl: a replay looks for it
    assert stored["r1"] | {"created_at": None, "once_key": None} == {
        "id": "r1",
        "once_key": None,
        "chat_id": 42,
        "conversation_id": "tg:42",  # where it was set (a forum topic's: delivered in that topic)
        "text": "Call mum",
        "due_at": "2025-03-28T18:30:00+01:00",
        "timezone": "Europe/Berlin",
        "created_at": None,
        "status": "pending",
        "delivered_at": None,
    }
    other_chat = SkillContext(chat_id=7, timezone="Europe/Berlin", services={"clock": lambda: NOW})
    assert "no reminder 'r1' in this chat" in err(manager, "reminders", {"action": "cancel", "id": "r1"}, other_chat)
    assert ok(manager, "reminders", {"action": "cancel", "id": "r1"}, ctx) == "cancelled reminder r1: Call mum"
    assert [r["id"] for r in ok(manager, "reminders", {"action": "list"}, ctx)] == ["r2", "r3"]


@pytest.mark.parametrize(
    "now_utc,minutes,due_utc,shown",
    [
        # 01:30 CET on the night clocks jump 02:00 -> 03:00: two real hours later is 04:30 CEST
        ("2026-03-29T00:30:00+00:00", 120, "2026-03-29T02:30:00+00:00", "2026-03-29 04:30"),
        # 02:30 CEST, the first of the two 02:30s in October: one real hour later is the second 02:30 (CET)
        ("2026-10-25T00:30:00+00:00", 60, "2026-10-25T01:30:00+00:00", "2026-10-25 02:30"),
    ],
)
def test_reminder_in_minutes_counts_real_minutes_across_a_dst_change(
    manager: SkillManager, ws: Workspace, now_utc: str, minutes: int, due_utc: str, shown: str
) -> None:
    now = datetime.fromisoformat(now_utc)
    ctx = SkillContext(conversation_id="tg:42", chat_id=42, timezone="Europe/Berlin", services={"clock": lambda: now})
    assert f"set for {shown} Europe/Berlin" in ok(
        manager, "reminders", {"action": "add", "text": "x", "in_minutes": minutes}, ctx
    )
    stored = json.loads((ws.root / "reminders/reminders.json").read_text())[0]
    assert datetime.fromisoformat(stored["due_at"]) == datetime.fromisoformat(due_utc)


def test_cancelling_a_reminder_that_already_fired_or_was_cancelled_says_so(
    manager: SkillManager, ws: Workspace, ctx: SkillContext
) -> None:
    from assistant_framework.stores import ReminderStore

    ok(manager, "reminders", {"action": "add", "text": "Call mum", "in_minutes": 5}, ctx)
    ok(manager, "reminders", {"action": "add", "text": "Pizza out", "in_minutes": 12}, ctx)
    ReminderStore(ws).mark_delivered("r1", NOW)
    # the user is not told "cancelled" for a reminder they already got
    assert "already delivered" in err(manager, "reminders", {"action": "cancel", "id": "r1"}, ctx)
    assert ok(manager, "reminders", {"action": "cancel", "id": "r2"}, ctx) == "cancelled reminder r2: Pizza out"
    assert "already cancelled" in err(manager, "reminders", {"action": "cancel", "id": "r2"}, ctx)
    stored = {r["id"]: r["status"] for r in json.loads((ws.root / "reminders/reminders.json").read_text())}
    assert stored == {"r1": "delivered", "r2": "cancelled"}


# -- time ------------------------------------------------------------------------------------


def test_time_now_and_date_math(manager: SkillManager, ctx: SkillContext) -> None:
    assert ok(manager, "time", {}, ctx) == {
        "now": "2025-03-28 10:00",
        "weekday": "Friday",
        "timezone": "Europe/Berlin",
        "utc_offset": "+0100",
    }
    assert ok(manager, "time", {"action": "add", "weeks": 1, "days": 2}, ctx) == {
        "date": "2025-04-06",
        "weekday": "Sunday",
        "days_from_today": 9,
    }
    assert ok(manager, "time", {"action": "weekday", "date": "2025-12-24"}, ctx)["weekday"] == "Wednesday"
    assert ok(manager, "time", {"action": "days_until", "date": "2025-04-01"}, ctx)["days_from_today"] == 4
    assert ok(manager, "time", {"action": "next", "weekday": "Friday"}, ctx)["date"] == "2025-04-04"
    assert ok(manager, "time", {"action": "next", "weekday": "sat"}, ctx)["date"] == "2025-03-29"
    assert "not one of" in err(manager, "time", {"action": "next", "weekday": "someday"}, ctx)
    tokyo = ok(manager, "time", {}, SkillContext(timezone="Asia/Tokyo", services={"clock": lambda: NOW}))
    assert tokyo["now"] == "2025-03-28 18:00" and tokyo["utc_offset"] == "+0900"
    assert "not a known IANA zone" in err(manager, "time", {}, SkillContext(timezone="Mars/Base"))
    real = ok(manager, "time", {})  # the real clock, in UTC without a context
    assert real["timezone"] == "UTC" and len(real["now"]) == 16


def test_time_next_takes_a_weekday_or_its_start_not_a_word_that_begins_like_one(manager: SkillManager, ctx) -> None:
    assert ok(manager, "time", {"action": "next", "weekday": "Fri."}, ctx)["date"] == "2025-04-04"
    assert ok(manager, "time", {"action": "next", "weekday": "thurs"}, ctx)["date"] == "2025-04-03"
    for word in ("monkey", "t", "Montag"):  # "monkey" was Monday: only its first three letters were read
        assert "is not one of monday" in err(manager, "time", {"action": "next", "weekday": word}, ctx), word


def test_a_reminder_stored_before_a_kill_left_its_record_begun_is_not_set_again(
    manager: SkillManager, ws: Workspace
) -> None:
    """The kill between the store write and the ledger's "done" line: the replay finds the reminder under the
    record's key and sets none (the owner would get it twice); one the store lacks is set (tests/test_jobs_crash.py)."""
    from assistant_framework.stores import ReminderStore
    from skills.reminders import ADDED

    def run_of_the_turn() -> SkillContext:  # each run of the turn for message 7 (a new one after a restart)
        return SkillContext(
            conversation_id="tg:42", chat_id=42, message_id=7, timezone="Europe/Berlin", services={"clock": lambda: NOW}
        )

    ok(manager, "reminders", {"action": "add", "text": "Call mum", "in_minutes": 5}, run_of_the_turn())
    begun = [row for row in ws.read_jsonl(ADDED) if row["status"] == "begun"]
    ws.write_text(ADDED, json.dumps(begun[0]) + "\n")  # what a kill before the "done" line leaves
    said = ok(manager, "reminders", {"action": "add", "text": "call Mum", "in_minutes": 6}, run_of_the_turn())
    assert "not made again" in said and [r["text"] for r in ReminderStore(ws).pending()] == ["Call mum"]
    ws.write_text("reminders/reminders.json", "[]\n")  # and what a kill before the store write leaves
    assert "set for" in ok(
        manager, "reminders", {"action": "add", "text": "call Mum", "in_minutes": 6}, run_of_the_turn()
    )
    assert [r["text"] for r in ReminderStore(ws).pending()] == ["call Mum"]
