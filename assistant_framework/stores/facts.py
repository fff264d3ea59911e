"""Facts: ``facts/facts.json``, structured (subject, attribute, value) memory with history.

A fact taken from outside content (a forwarded message, an attachment, a mail) carries
``"untrusted": true``; records without the key (every older file) are the owner's. The mark is
the owner's to remove: a record they edited by hand is left as they left it.
"""

from __future__ import annotations

from datetime import datetime

from ..workspace import Workspace
from ._common import JsonListFile, iso, norm, now_utc, one_line
from .provenance import is_untrusted
from .records import Fact

FACTS_FILE = "facts/facts.json"


class FactStore:
    """Add facts (superseding older values) and look them up."""

    def __init__(self, workspace: Workspace) -> None:
        self.file: JsonListFile[Fact] = JsonListFile(workspace, FACTS_FILE)

    def all(self) -> list[Fact]:
        return self.file.load()

    def add(
        self,
        subject: str,
        attribute: str,
        value: str,
        source: str = "skill",
        source_ref: str | None = None,
        time: datetime | None = None,
        untrusted: bool = False,
    ) -> tuple[Fact, str]:
        """Store a fact; returns ``(fact, action)`` with action added|duplicate|superseded|kept_user.

        Same subject+attribute with another value supersedes the current fact, except that
        an extracted fact never replaces one the user stated (``kept_user``). An ``untrusted``
        fact (from outside content) is stored marked and never supersedes an unmarked one (it
        is added beside it); an unmarked fact that is not extracted replaces a marked one with
        the same value (the owner confirmed it).
        """
        subject, attribute, value = one_line(subject), one_line(attribute), one_line(value)
        if not (subject and attribute and value):
            raise ValueError(f"fact needs subject, attribute and value, got {subject!r}, {attribute!r}, {value!r}")
        with self.file.edit() as rows:
            current = [
                row
                for row in rows
                if row.get("status", "current") == "current"
                and norm(row.get("subject")) == norm(subject)
                and norm(row.get("attribute")) == norm(attribute)
            ]
            for row in current:
                if norm(row.get("value")) == norm(value) and (
                    untrusted or source == "extraction" or not is_untrusted(row)
                ):
                    return row, "duplicate"
            if source == "extraction":
                for row in current:
                    if row.get("source") == "user":
                        return row, "kept_user"
            fact: Fact = {
                "id": self.file.allocate_id(rows, "f"),
                "subject": subject,
                "attribute": attribute,
                "value": value,
                "source": source,
                "source_ref": source_ref,
                "time": iso(time or now_utc()),
                "status": "current",
                "superseded_by": None,
            }
            if untrusted:
                fact["untrusted"] = True
                current = [row for row in current if is_untrusted(row)]  # outside text never replaces the owner's
            for row in current:
                row["status"] = "superseded"
                row["superseded_by"] = fact["id"]
            rows.append(fact)
        return fact, "superseded" if current else "added"

    def lookup(
        self,
        subject: str | None = None,
        attribute: str | None = None,
        query: str | None = None,
        include_superseded: bool = False,
    ) -> list[Fact]:
        """Facts whose subject/attribute contain the given text and any field contains ``query``."""
        found = []
        for row in self.file.load():
            if not include_superseded and row.get("status", "current") != "current":
                continue
            if subject and norm(subject) not in norm(row.get("subject")):
                continue
            if attribute and norm(attribute) not in norm(row.get("attribute")):
                continue
            if query and not any(norm(query) in norm(row.get(key)) for key in ("subject", "attribute", "value")):
                continue
            found.append(row)
        return found

    def forget(self, fact_id: str) -> list[Fact]:
        """Delete a fact and the older values it superseded (its history); returns what was removed.

        KeyError when no fact has that id.
        """
        with self.file.edit() as rows:
            doomed = {str(fact_id)}
            if not any(str(row.get("id")) == str(fact_id) for row in rows):
                raise KeyError(f"no fact with id {fact_id!r}")
            while True:  # follow the superseded chain backwards
                more = {str(row.get("id")) for row in rows if str(row.get("superseded_by")) in doomed} - doomed
                if not more:
                    break
                doomed |= more
            removed = [row for row in rows if str(row.get("id")) in doomed]
            rows[:] = [row for row in rows if str(row.get("id")) not in doomed]
        return removed
