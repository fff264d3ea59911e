"""The records the stores write and return, as JSON on disk (``TypedDict``: the files stay as they are).

Every key may be missing in a row edited by hand (``total=False``): the stores read rows with ``.get``.
A record from outside content carries ``"untrusted": true`` (see ``provenance``). Contacts are no record
here: the owner adds any field they like to one, so a contact is a ``JsonObject``.
"""

from __future__ import annotations

from typing import TypedDict

from assistant_framework.json_types import JsonObject

#: A contact of ``contacts/contacts.json``: name, phone, email, notes and any field the owner adds.
Contact = JsonObject


class Fact(TypedDict, total=False):
    """One fact of ``facts/facts.json``: a value of a subject's attribute, with where it came from."""

    id: str
    subject: str
    attribute: str
    value: str
    #: ``user``, ``skill``, ``extraction``: an extracted fact never replaces one the user stated.
    source: str
    #: The conversation it was said in (None: not known).
    source_ref: str | None
    time: str
    #: ``current`` or ``superseded`` (by the fact ``superseded_by`` names).
    status: str
    superseded_by: str | None
    untrusted: bool


class Task(TypedDict, total=False):
    """One task of ``tasks/tasks.json``: a to-do with an optional due date."""

    id: str
    title: str
    #: ``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM``; None: no due date.
    due: str | None
    #: ``open`` or ``done``.
    status: str
    created_at: str
    done_at: str | None
    notes: str
    #: Who wrote it when not the owner's chat (e.g. ``mcp:desktop``).
    source: str
    untrusted: bool


class Reminder(TypedDict, total=False):
    """One reminder of ``reminders/reminders.json``: a message the bot sends to a chat at ``due_at``."""

    id: str
    chat_id: int | str
    text: str
    #: ISO 8601 with the offset of ``timezone`` (a time typed by hand without one is wall time there).
    due_at: str
    timezone: str
    created_at: str
    #: ``pending``, ``delivered``, ``failed`` or ``cancelled``.
    status: str
    delivered_at: str | None
    #: Why the chat refused it for good, and when (``status`` ``failed``).
    failed_at: str
    error: str
    #: The conversation it was set in (a forum topic's: delivered in that topic); absent: the chat's.
    conversation_id: str
    #: The key of the ``reminders`` skill's ledger record that added it (a replay after a kill looks for it).
    once_key: str
    untrusted: bool


class Birthday(TypedDict, total=False):
    """One birthday of ``birthdays/birthdays.json``: ``MM-DD`` or ``YYYY-MM-DD``, with notes."""

    name: str
    date: str
    notes: str
    untrusted: bool


class Routine(TypedDict, total=False):
    """One routine of ``routines/routines.json``: what the owner does, and when."""

    name: str
    when: str
    steps: str
    untrusted: bool


class Learning(TypedDict, total=False):
    """One ``- text`` line of ``learnings/<topic>.md``; ``untrusted`` when its topic file is marked."""

    untrusted: bool
    topic: str
    text: str


class LearningAdded(Learning, total=False):
    """What adding a learning did: the file it is in, and whether the line was new (``added``)."""

    path: str
    added: bool


class NoteRef(TypedDict, total=False):
    """A note of ``notes/``: its path and title (``untrusted`` first when it is marked)."""

    untrusted: bool
    path: str
    title: str


class Note(NoteRef, total=False):
    """One note read whole: its body without the front matter."""

    body: str


class NoteHit(NoteRef, total=False):
    """A note found by a search, with the text around the words."""

    snippet: str
