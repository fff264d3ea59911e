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
