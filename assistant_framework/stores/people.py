"""Contacts (``contacts/contacts.json``) and birthdays (``birthdays/birthdays.json``).

A record added, or changed, in a turn with outside content carries ``"untrusted": true`` (see
``provenance``): it holds that content's words. A change in a trusted turn keeps the mark; removing
the key by hand makes the record the owner's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, timedelta

from ..workspace import Workspace
from ._common import JsonListFile, norm, one_line, pick_one
from .provenance import UNTRUSTED_KEY, mark_record
from .records import Birthday, Contact

CONTACTS_FILE = "contacts/contacts.json"
BIRTHDAYS_FILE = "birthdays/birthdays.json"
_BIRTHDAY = re.compile(r"^(?:(\d{4})-)?(\d{2})-(\d{2})$")


def parse_birthday(text: str) -> str:
    """Validate ``MM-DD`` or ``YYYY-MM-DD`` and return it unchanged; ValueError otherwise."""
    match = _BIRTHDAY.match(str(text).strip())
    if not match:
        raise ValueError(f"birthday {text!r} is not MM-DD or YYYY-MM-DD")
    year = int(match.group(1) or 2000)  # 2000 is a leap year, so 02-29 is accepted
    try:
        date(year, int(match.group(2)), int(match.group(3)))
    except ValueError:
        raise ValueError(f"birthday {text!r} is not a real calendar date") from None
    return str(text).strip()


def next_occurrence(birthday: str, today: date) -> date | None:
    """The next date (today or later) the birthday falls on; 29 Feb is the 28th in other years."""
    match = _BIRTHDAY.match(str(birthday).strip())
    if not match:
        return None
    month, day = int(match.group(2)), int(match.group(3))
    for year in (today.year, today.year + 1):
        try:
            when = date(year, month, day)
        except ValueError:
            if (month, day) != (2, 29):
                return None
            when = date(year, 2, 28)
        if when >= today:
            return when
    return None


def _matches(row: Mapping[str, object], query: str) -> bool:
    wanted = norm(query)
    return any(
        wanted in norm(value)
        for key, value in row.items()
        if key != UNTRUSTED_KEY and isinstance(value, (str, int, float))
    )


class ContactStore:
    """People with phone, email, notes and any free fields the user adds."""

    def __init__(self, workspace: Workspace) -> None:
        self.file: JsonListFile[Contact] = JsonListFile(workspace, CONTACTS_FILE)

    def all(self) -> list[Contact]:
        return self.file.load()

    def add(
        self, name: str, phone: str = "", email: str = "", notes: str = "", *, untrusted: bool = False, **fields: str
    ) -> Contact:
        """Store a new contact; ValueError if one with that name exists (use update). ``untrusted``
        (written from outside content) marks it."""
        name = one_line(name)
        if not name:
            raise ValueError("contact name is empty")
        contact: Contact = {"name": name, "phone": phone or "", "email": email or "", "notes": notes or "", **fields}
        if untrusted:
            mark_record(contact)
        with self.file.edit() as rows:
            if any(norm(row.get("name")) == norm(name) for row in rows):
                raise ValueError(f"contact {name!r} already exists; update it instead")
            rows.append(contact)
        return contact

    def update(self, name: str, *, untrusted: bool = False, **fields: str) -> Contact:
        """Change fields of the contact matching ``name``; empty values are ignored. ``untrusted``
        marks the contact when a value changed (it now holds outside text); otherwise a mark stays."""
        with self.file.edit() as rows:
            contact = pick_one(rows, name, "contact", label="name")
            changed = {
                key: value for key, value in fields.items() if value not in (None, "") and contact.get(key) != value
            }
            contact.update(changed)
            if untrusted and changed:
                mark_record(contact)
        return contact

    def find(self, query: str) -> list[Contact]:
        """Contacts where any field contains ``query`` (case-insensitive); all when empty."""
        rows = self.file.load()
        return rows if not norm(query) else [row for row in rows if _matches(row, query)]


class BirthdayStore:
    """Birthdays as ``MM-DD`` or ``YYYY-MM-DD`` with notes."""

    def __init__(self, workspace: Workspace) -> None:
        self.file: JsonListFile[Birthday] = JsonListFile(workspace, BIRTHDAYS_FILE)

    def all(self) -> list[Birthday]:
        return self.file.load()

    def add(self, name: str, date: str, notes: str = "", *, untrusted: bool = False) -> Birthday:
        """Store a birthday; ValueError if that person already has one (use update). ``untrusted``
        (written from outside content) marks it."""
        name = one_line(name)
        if not name:
            raise ValueError("birthday name is empty")
        entry: Birthday = {"name": name, "date": parse_birthday(date), "notes": notes or ""}
        if untrusted:
            mark_record(entry)
        with self.file.edit() as rows:
            if any(norm(row.get("name")) == norm(name) for row in rows):
                raise ValueError(f"birthday of {name!r} already stored; update it instead")
            rows.append(entry)
        return entry

    def update(
        self, name: str, date: str | None = None, notes: str | None = None, *, untrusted: bool = False
    ) -> Birthday:
        """Change the date and/or notes of the person matching ``name``; ``untrusted`` marks the entry
        when something changed (otherwise a mark stays)."""
        with self.file.edit() as rows:
            entry = pick_one(rows, name, "birthday", label="name")
            before = dict(entry)
            if date:
                entry["date"] = parse_birthday(date)
            if notes:
                entry["notes"] = notes
            if untrusted and entry != before:
                mark_record(entry)
        return entry

    def find(self, query: str) -> list[Birthday]:
        """Birthdays whose name, date or notes contain ``query``; all when empty."""
        rows = self.file.load()
        return rows if not norm(query) else [row for row in rows if _matches(row, query)]

    def upcoming(self, today: date, days: int = 30) -> list[tuple[date, Birthday]]:
        """Birthdays from ``today`` through ``today + days``, soonest first."""
        end = today + timedelta(days=days)
        found = [
            (when, row)
            for row in self.file.load()
            if (when := next_occurrence(row.get("date", ""), today)) and when <= end
        ]
        return sorted(found, key=lambda pair: (pair[0], norm(pair[1].get("name"))))
