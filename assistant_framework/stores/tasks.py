"""Tasks: ``tasks/tasks.json``, a list of to-dos with optional due dates.

A task added in a turn with outside content carries ``"untrusted": true`` (see ``provenance``);
completing it keeps the mark, removing the key by hand makes it the owner's.
"""

from __future__ import annotations

import builtins  # the stores have a list() method: their annotations name the type through builtins
import re
from collections.abc import Mapping
from datetime import date, datetime

from ..workspace import Workspace
from ._common import JsonListFile, iso, now_utc, one_line, pick_one
from .provenance import mark_record
from .records import Task

TASKS_FILE = "tasks/tasks.json"
STATUSES = ("open", "done", "due", "all")
_DUE = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2})?$")


def parse_due(value: str | date | None) -> str | None:
    """Normalise a due value to ``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM``; ValueError otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M")
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip().replace(" ", "T")
    if not _DUE.match(text):
        raise ValueError(f"due date {value!r} is not YYYY-MM-DD or YYYY-MM-DDTHH:MM")
    fmt = "%Y-%m-%dT%H:%M" if "T" in text else "%Y-%m-%d"
    try:
        datetime.strptime(text, fmt)
    except ValueError:
        raise ValueError(f"due date {value!r} is not a real calendar date") from None
    return text


def due_day(task: Mapping[str, object]) -> date | None:
    """The calendar day a task is due, or None (also for a hand-edited value that does not parse)."""
    due = task.get("due")
    if not due:
        return None
    try:
        return date.fromisoformat(str(due)[:10])
    except ValueError:
        return None


class TaskStore:
    """Add, list, complete and delete tasks; writes are atomic and locked."""

    def __init__(self, workspace: Workspace) -> None:
        self.file: JsonListFile[Task] = JsonListFile(workspace, TASKS_FILE)

    def all(self) -> list[Task]:
        return self.file.load()

    def add(
        self, title: str, due: str | date | None = None, notes: str = "", *, untrusted: bool = False, source: str = ""
    ) -> Task:
        """Store a new open task and return it; ``untrusted`` (written from outside content) marks it; ``source``
        (who wrote it, e.g. ``mcp:desktop``) is kept in it."""
        title = one_line(title)
        if not title:
            raise ValueError("task title is empty")
        task: Task = {
            "id": "",
            "title": title,
            "due": parse_due(due),
            "status": "open",
            "created_at": iso(now_utc()),
            "done_at": None,
            "notes": notes or "",
        }
        if source:
            task["source"] = one_line(source)
        if untrusted:
            mark_record(task)
        with self.file.edit() as rows:
            task["id"] = self.file.allocate_id(rows, "t")
            rows.append(task)
        return task

    def list(self, status: str = "open", today: date | None = None) -> list[Task]:
        """Tasks by status: open, done, due (open and due today or earlier) or all."""
        if status not in STATUSES:
            raise ValueError(f"task status {status!r} is not one of {', '.join(STATUSES)}")
        rows = self.file.load()
        if status == "all":
            return rows
        if status == "due":
            return self.due_or_overdue(today or date.today())
        return [row for row in rows if row.get("status", "open") == status]

    def due_or_overdue(self, today: date) -> builtins.list[Task]:
        """Open tasks due on ``today`` or earlier, earliest first."""
        found = [
            (d, row)
            for row in self.file.load()
            if row.get("status", "open") == "open" and (d := due_day(row)) and d <= today
        ]
        return [row for _, row in sorted(found, key=lambda pair: (pair[0], str(pair[1].get("due"))))]

    def complete(self, id_or_title: str) -> Task:
        """Mark one open task done (by id or title) and return it; LookupError when none or several match."""
        with self.file.edit() as rows:
            open_rows = [row for row in rows if row.get("status", "open") == "open"]
            task = pick_one(open_rows, id_or_title, "open task")
            task["status"] = "done"
            task["done_at"] = iso(now_utc())
        return task

    def delete(self, id_or_title: str) -> Task:
        """Remove one task (by id or title) and return it."""
        with self.file.edit() as rows:
            task = pick_one(rows, id_or_title, "task")
            rows.remove(task)
        return task
