"""Shared plumbing for the typed stores: a locked JSON list file and small helpers."""

from __future__ import annotations

import json
import logging
import re
import threading
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Generic, TypeVar, cast

from ..workspace import Workspace

log = logging.getLogger(__name__)

#: A store's row: a record of ``records`` (a ``TypedDict``) or a ``JsonObject``.
Row = TypeVar("Row", bound=Mapping[str, object])


class NotFoundError(LookupError):
    """No record matches; the message names the query and what exists."""


class AmbiguousError(LookupError):
    """Several records match; the message lists them so the caller can pick one."""


def now_utc() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """ISO 8601 with seconds and the UTC offset; refuses naive datetimes."""
    if moment.tzinfo is None or moment.tzinfo.utcoffset(moment) is None:
        raise ValueError(f"timestamp {moment!r} has no timezone; use an aware datetime")
    return moment.isoformat(timespec="seconds")


def norm(text: object) -> str:
    """Case-, whitespace- and Unicode-form-insensitive form used for matching ("José" typed with
    a composed é or with e + a combining accent is one name)."""
    return unicodedata.normalize("NFC", " ".join(str(text or "").split()).casefold())


def one_line(text: object) -> str:
    return " ".join(str(text or "").split())


def slugify(text: str, fallback: str = "untitled") -> str:
    """A file-name-safe slug: lower case letters, digits and dashes."""
    slug = re.sub(r"[^\w]+", "-", str(text).casefold(), flags=re.UNICODE).strip("-_")
    return slug[:60].strip("-") or fallback


def next_id(rows: Sequence[Mapping[str, object]], prefix: str) -> str:
    """``prefix`` + one more than the largest number used so far (ids are never reused)."""
    pattern = re.compile(rf"^{re.escape(prefix)}(\d+)$")
    numbers = [int(m.group(1)) for row in rows if (m := pattern.match(str(row.get("id", ""))))]
    return f"{prefix}{max(numbers, default=0) + 1}"


#: Rows that are not objects already logged, as (file, index, row): each is logged once, again when it changes.
_reported_bad_rows: set[tuple[str, int, str]] = set()
_reported_lock = threading.Lock()


class JsonListFile(Generic[Row]):
    """A JSON file holding a list of objects, edited under the workspace file lock.

    A row that is not an object (a string or number typed by hand) is skipped instead of making the
    whole file unreadable: logged once, and written back untouched in its place. The objects are taken
    as the store's ``Row`` record; a key edited by hand may be missing or of another type.
    """

    def __init__(self, workspace: Workspace, rel: str) -> None:
        self.workspace = workspace
        self.rel = rel

    def load(self) -> list[Row]:
        """All records; [] when the file does not exist yet."""
        return self._read()[0]

    def _read(self) -> tuple[list[Row], dict[int, object]]:
        """The object rows, and the other rows by their index."""
        data = self.workspace.read_json(self.rel, default=[])
        if data is None:
            return [], {}
        if not isinstance(data, list):
            raise ValueError(f"workspace file {self.rel!r} must hold a JSON list of objects")
        bad = {i: row for i, row in enumerate(data) if not isinstance(row, dict)}
        if bad:
            self._report(bad)
        return [cast(Row, row) for row in data if isinstance(row, dict)], bad

    def _report(self, bad: dict[int, object]) -> None:
        """One warning per row that is not an object, not one at every read."""
        for index, row in bad.items():
            key = (str(self.workspace.path(self.rel)), index, json.dumps(row, default=str))
            with _reported_lock:
                if key in _reported_bad_rows:
                    continue
                _reported_bad_rows.add(key)
            log.warning(
                "stores: %s row %d is not a JSON object (%s): skipped, left in the file as it is",
                self.rel,
                index,
                key[2][:80],
            )

    def allocate_id(self, rows: Sequence[Mapping[str, object]], prefix: str) -> str:
        """A fresh id; call inside ``edit``. A high-water mark in ``state/ids/`` keeps
        the id of a deleted last record from being handed out again."""
        mark_rel = f"state/ids/{self.rel.replace('/', '__')}.txt"
        try:
            mark = self.workspace.read_text(mark_rel, default="0").strip()
        except ValueError:  # bad bytes: it is only a high-water mark, the rows give the next id again
            aside = self.workspace.move_aside(mark_rel)
            log.warning(
                "stores: %s could not be read: moved aside to %s; ids continue after the records", mark_rel, aside
            )
            mark = "0"
        floor = int(mark) if mark.isdigit() else 0
        new = next_id(rows, prefix)
        number = max(int(new[len(prefix) :]), floor + 1)
        self.workspace.write_text(mark_rel, f"{number}\n")
        return f"{prefix}{number}"

    @contextmanager
    def edit(self) -> Iterator[list[Row]]:
        """Load, let the caller change the list in place, then write it atomically if it changed."""
        with self.workspace.lock(self.rel):
            rows, bad = self._read()
            before = json.dumps(rows, sort_keys=True, default=str)
            yield rows
            if json.dumps(rows, sort_keys=True, default=str) != before:
                self.workspace.write_json(self.rel, _with_rows_put_back(rows, bad))


def _with_rows_put_back(rows: Sequence[Mapping[str, object]], bad: dict[int, object]) -> list[object]:
    """``rows`` with the skipped rows back at their old index (the owner's data is never dropped)."""
    out: list[object] = list(rows)
    for index in sorted(bad):
        out.insert(min(index, len(out)), bad[index])
    return out


def pick_one(rows: Sequence[Row], query: str, kind: str, label: str = "title") -> Row:
    """The one record whose id or ``label`` matches ``query`` (exact first, then substring)."""
    wanted = norm(query)
    if not wanted:
        raise NotFoundError(f"no {kind} given")
    for row in rows:
        if norm(row.get("id")) == wanted:
            return row
    exact = [row for row in rows if norm(row.get(label)) == wanted]
    partial = exact or [row for row in rows if wanted in norm(row.get(label))]
    if len(partial) == 1:
        return partial[0]
    if not partial:
        known = ", ".join(_label(row, label) for row in rows[:10]) or "none"
        raise NotFoundError(f"no {kind} matches {query!r}; existing: {known}")
    options = ", ".join(_label(row, label) for row in partial[:10])
    raise AmbiguousError(f"{len(partial)} {kind}s match {query!r}: {options}; say which one")


def _label(row: Mapping[str, object], label: str) -> str:
    return f"{row['id']} {row.get(label, '')!s}".strip() if row.get("id") else str(row.get(label, ""))
