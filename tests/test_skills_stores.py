"""The typed data stores: file formats on disk, rules others rely on, and concurrency."""

from __future__ import annotations

import json
import threading
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from assistant_framework.stores import (
    AmbiguousError,
    BirthdayStore,
    ContactStore,
    FactStore,
    LearningStore,
    NoteStore,
    NotFoundError,
    ReminderStore,
    RoutineStore,
    TaskStore,
)
from assistant_framework.workspace import Workspace

BERLIN = ZoneInfo("Europe/Berlin")


def test_tasks_due_or_overdue_and_status_filters(ws: Workspace) -> None:
    store = TaskStore(ws)
    store.add("late", due="2025-01-01")
    store.add("today", due=date(2025, 1, 5))
    store.add("later", due="2025-01-09T08:00")
    store.add("undated")
    store.complete("today")
    assert [t["title"] for t in store.due_or_overdue(date(2025, 1, 5))] == ["late"]
    assert [t["title"] for t in store.list("due", today=date(2025, 1, 9))] == ["late", "later"]
    assert [t["title"] for t in store.list("done")] == ["today"]
    assert len(store.list("all")) == 4
    with pytest.raises(ValueError, match="status 'soon'"):
        store.list("soon")


def test_task_title_matching_is_strict_about_ambiguity(ws: Workspace) -> None:
    store = TaskStore(ws)
    store.add("Call Anna")
    store.add("Call Bob")
    with pytest.raises(AmbiguousError, match="2 open tasks match 'call'"):
        store.complete("call")
    with pytest.raises(NotFoundError, match="no task matches 'zzz'"):
        store.delete("zzz")
    assert store.complete("call bob")["id"] == "t2"


def test_ids_are_never_reused_after_delete(ws: Workspace) -> None:
    store = TaskStore(ws)
    store.add("a")
    store.add("b")
    store.delete("t2")
    assert store.add("c")["id"] == "t3"


def test_hand_edited_file_is_read_and_a_broken_one_is_named(ws: Workspace) -> None:
    ws.write_text("tasks/tasks.json", '[{"id": "t7", "title": "from the user", "status": "open"}]')
    store = TaskStore(ws)
    assert store.add("next")["id"] == "t8"
    assert [t["title"] for t in store.list()] == ["from the user", "next"]
    ws.write_text("tasks/tasks.json", '[{"id": "t1",')
    with pytest.raises(ValueError, match="tasks/tasks.json"):
        store.list()


@pytest.mark.parametrize(
    "rel, store, add",
    [
        ("tasks/tasks.json", TaskStore, lambda s, n: s.add(f"task {n}")),
        ("facts/facts.json", FactStore, lambda s, n: s.add("user", f"attribute {n}", "x")),
        ("contacts/contacts.json", ContactStore, lambda s, n: s.add(f"Person {n}")),
        ("birthdays/birthdays.json", BirthdayStore, lambda s, n: s.add(f"Person {n}", "1990-05-04")),
        ("routines/routines.json", RoutineStore, lambda s, n: s.set(f"routine {n}", "stretch")),
    ],
    ids=["tasks", "facts", "contacts", "birthdays", "routines"],
)
def test_a_hand_typed_row_that_is_not_an_object_costs_only_itself(ws: Workspace, rel, store, add, caplog) -> None:
    """A line like "buy bread" typed into the list by hand: the other rows still work, a new one is
    added, and the odd row stays in the file where it was (one warning names the file and the row)."""
    add(store(ws), 1)
    rows = json.loads(ws.read_text(rel))
    ws.write_text(rel, json.dumps([rows[0], "buy bread", 42], indent=1))
    again = store(ws)
    assert len(again.file.load()) == 1
    add(again, 2)
    on_disk = json.loads(ws.read_text(rel))
    assert on_disk[1:3] == ["buy bread", 42] and len(on_disk) == 4
    assert sum(f"{rel} row 1 is not a JSON object" in r.getMessage() for r in caplog.records) == 1


def test_concurrent_adds_lose_nothing(ws: Workspace) -> None:
    store = TaskStore(ws)
    threads = [threading.Thread(target=lambda i=i: store.add(f"task {i}")) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    stored = json.loads((ws.root / "tasks/tasks.json").read_text())
    assert sorted(t["title"] for t in stored) == sorted(f"task {i}" for i in range(20))
    assert len({t["id"] for t in stored}) == 20


def test_reminders_due_delivery_and_restart(ws: Workspace) -> None:
    store = ReminderStore(ws)
    first = store.add(1, "water plants", datetime(2025, 10, 26, 2, 30, tzinfo=BERLIN, fold=1), "Europe/Berlin")
    store.add(2, "other chat", datetime(2025, 10, 26, 12, 0, tzinfo=timezone.utc), "Asia/Tokyo")
    assert first["due_at"] == "2025-10-26T02:30:00+01:00"  # the second 02:30 of the DST fall-back night
    with pytest.raises(ValueError, match="no timezone"):
        store.add(1, "naive", datetime(2025, 1, 1, 9, 0), "UTC")
    reopened = ReminderStore(Workspace(ws.root))  # as after a restart
    assert reopened.due(datetime(2025, 10, 26, 1, 29, tzinfo=timezone.utc)) == []
    assert [r["id"] for r in reopened.due(datetime(2025, 10, 26, 1, 30, tzinfo=timezone.utc))] == ["r1"]
    delivered_at = datetime(2025, 10, 26, 1, 30, 5, tzinfo=timezone.utc)
    reopened.mark_delivered("r1", delivered_at)
    reopened.mark_delivered("r1", delivered_at + timedelta(minutes=5))  # a retry keeps the first time
    stored = {r["id"]: r for r in json.loads((ws.root / "reminders/reminders.json").read_text())}
    assert stored["r1"]["status"] == "delivered" and stored["r1"]["delivered_at"] == "2025-10-26T01:30:05+00:00"
    assert stored["r2"]["due_at"] == "2025-10-26T21:00:00+09:00" and stored["r2"]["timezone"] == "Asia/Tokyo"
    assert [r["id"] for r in reopened.pending()] == ["r2"]
    assert [r["id"] for r in reopened.list(chat_id="2")] == ["r2"]
    with pytest.raises(NotFoundError, match="r9"):
        reopened.cancel("r9")


def test_facts_user_statements_win_over_extraction(ws: Workspace) -> None:
    store = FactStore(ws)
    fact, action = store.add("me", "favourite colour", "green", source="user")
    assert action == "added"
    kept, action = store.add("Me", "favourite colour", "blue", source="extraction", source_ref="turn-9")
    assert action == "kept_user" and kept["id"] == fact["id"]
    _, action = store.add("me", "favourite  colour", "GREEN", source="extraction")
    assert action == "duplicate"
    newer, action = store.add("me", "favourite colour", "blue", source="user")
    assert action == "superseded" and newer["id"] == "f2"
    stored = json.loads((ws.root / "facts/facts.json").read_text())
    assert [(f["id"], f["status"], f["superseded_by"]) for f in stored] == [
        ("f1", "superseded", "f2"),
        ("f2", "current", None),
    ]
    assert set(stored[0]) == {
        "id",
        "subject",
        "attribute",
        "value",
        "source",
        "source_ref",
        "time",
        "status",
        "superseded_by",
    }
    assert store.lookup(attribute="colour")[0]["value"] == "blue"
    assert len(store.lookup(subject="me", include_superseded=True)) == 2


def test_duplicate_fact_writes_nothing(ws: Workspace) -> None:
    store = FactStore(ws)
    store.add("Anna", "city", "Berlin")
    before = (ws.root / "facts/facts.json").stat().st_mtime_ns
    content = (ws.root / "facts/facts.json").read_text()
    assert store.add("anna", "city", "berlin")[1] == "duplicate"
    assert (ws.root / "facts/facts.json").read_text() == content
    assert (ws.root / "facts/facts.json").stat().st_mtime_ns == before


def test_birthday_upcoming_wraps_the_year_and_handles_29_february(ws: Workspace) -> None:
    store = BirthdayStore(ws)
    store.add("Leap", "2000-02-29")
    store.add("NewYear", "01-02")
    assert store.upcoming(date(2025, 2, 20), days=10) == [
        (date(2025, 2, 28), {"name": "Leap", "date": "2000-02-29", "notes": ""})
    ]
    assert [name for _, e in store.upcoming(date(2027, 12, 30), days=5) for name in [e["name"]]] == ["NewYear"]
    assert store.upcoming(date(2028, 2, 29), days=0)[0][0] == date(2028, 2, 29)


def test_learnings_keep_other_lines_of_a_hand_edited_file(ws: Workspace) -> None:
    ws.write_text("learnings/general.md", "# Things I learned\n\n- one\n- two\n")
    store = LearningStore(ws)
    store.forget("one")
    store.add("three")
    assert (ws.root / "learnings/general.md").read_text() == "# Things I learned\n\n- two\n- three\n"
    with pytest.raises(AmbiguousError):
        store.add("twelve") and store.forget("t")


def test_notes_with_the_same_title_get_distinct_files(ws: Workspace) -> None:
    store = NoteStore(ws)
    assert store.add("Ideas", "a")["path"] == "notes/ideas.md"
    assert store.add("Ideas", "b")["path"] == "notes/ideas-2.md"
    assert (ws.root / "notes/ideas-2.md").read_text() == "# Ideas\n\nb\n"


def test_a_damaged_id_mark_is_moved_aside_and_ids_continue(ws: Workspace, caplog) -> None:
    store = TaskStore(ws)
    first = store.add("one")
    marks = ws.list("state/ids/*.txt")
    assert len(marks) == 1
    ws.path(marks[0]).write_bytes(b"\xff\xfe\x00")  # bad bytes in a state file the store can do without
    second = store.add("two")
    assert second["id"] != first["id"] and [t["title"] for t in store.list("all")] == ["one", "two"]
    assert len(ws.list("state/ids/*.broken-*")) == 1
    assert sum("moved aside" in r.getMessage() for r in caplog.records if r.levelname == "WARNING") == 1


def test_a_name_typed_composed_or_decomposed_is_one_contact(ws: Workspace) -> None:
    # "José" with é as one character (a phone keyboard) or as e + U+0301 (a Mac's file names, some keyboards).
    composed, decomposed = "Jos\u00e9 Garc\u00eda", "Jose\u0301 Garci\u0301a"
    contacts = ContactStore(ws)
    contacts.add(composed, phone="+34 600 000 000")
    assert [c["name"] for c in contacts.find(decomposed)] == [composed]
    with pytest.raises(ValueError):
        contacts.add(decomposed)  # the same person, already there
    tasks = TaskStore(ws)
    tasks.add("call Jos\u00e9")
    assert tasks.complete("call Jose\u0301")["title"] == "call Jos\u00e9"
