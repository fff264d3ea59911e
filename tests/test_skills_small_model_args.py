"""Built-in skills called with the arguments small models produce: each either does the intended
thing or says exactly what to fix; never a silently wrong write, never a host path in an error."""

from __future__ import annotations

import json

import pytest

from assistant_framework.skills import SkillContext, SkillManager
from assistant_framework.workspace import Workspace
from tests.skills_harness import err, ok


def test_birthday_with_a_birth_year_after_today_is_refused(
    manager: SkillManager, ws: Workspace, ctx: SkillContext
) -> None:
    # "Anna's birthday is on 4 May": a small model writes this year's (or a later) date as the birth date.
    for date in ("2025-05-04", "2030-01-01"):
        error = err(manager, "birthdays", {"action": "add", "name": "Anna", "date": date}, ctx)
        assert "future" in error and repr(date[5:]) in error, error  # names the MM-DD form to use
    assert not (ws.root / "birthdays/birthdays.json").exists()
    ok(manager, "birthdays", {"action": "add", "name": "Anna", "date": "1990-05-04"}, ctx)
    assert "future" in err(manager, "birthdays", {"action": "update", "name": "Anna", "date": "2026-05-04"}, ctx)
    assert json.loads((ws.root / "birthdays/birthdays.json").read_text())[0]["date"] == "1990-05-04"
    # Born earlier this year is fine: a baby.
    ok(manager, "birthdays", {"action": "add", "name": "Baby", "date": "2025-01-15"}, ctx)
    upcoming = ok(manager, "birthdays", {"action": "upcoming", "days": 366}, ctx)
    assert all(row.get("turns", 0) >= 0 for row in upcoming), upcoming


@pytest.mark.parametrize("action", ["write", "append"])
@pytest.mark.parametrize("path", ["notes", "notes/"])
def test_file_write_to_a_folder_names_the_fix_without_host_paths(
    manager: SkillManager, ws: Workspace, ctx: SkillContext, action: str, path: str
) -> None:
    ok(manager, "file", {"action": "write", "path": "notes/a.md", "content": "hello"}, ctx)
    error = err(manager, "file", {"action": action, "path": path, "content": "x"}, ctx)
    assert "is a folder" in error and "notes/<name>" in error, error
    assert str(ws.root) not in error and ".tmp-" not in error, error
    assert sorted(p.name for p in (ws.root / "notes").iterdir()) == ["a.md"]


def test_reminder_in_zero_minutes_says_in_minutes_is_too_small(
    manager: SkillManager, ws: Workspace, ctx: SkillContext
) -> None:
    # Before: "needs exactly one of at or in_minutes", though in_minutes was given.
    error = err(manager, "reminders", {"action": "add", "text": "tea", "in_minutes": 0}, ctx)
    assert "in_minutes must be at least 1, got 0" in error, error
    assert ok(manager, "reminders", {"action": "list"}, ctx) == "no pending reminders"


def test_numbers_and_text_in_the_type_the_schema_declares(
    manager: SkillManager, ctx: SkillContext, ws: Workspace
) -> None:
    """Small models write ids as numbers and numbers as text: the value is taken in the declared type,
    so the skill answers about the thing itself ("no reminder '1'"), not "1 is not of type 'string'"."""
    added = ok(manager, "reminders", {"action": "add", "text": "stretch", "in_minutes": "15"}, ctx)  # "15" for 15
    assert "stretch" in json.dumps(added, ensure_ascii=False)
    problem = err(manager, "reminders", {"action": "cancel", "id": 1}, ctx)
    assert "not of type" not in problem and "'1'" in problem
    bad = err(manager, "reminders", {"action": "add", "text": "x", "in_minutes": "soon"}, ctx)
    assert "in_minutes" in bad  # not a number at all: still named by the schema check
