"""Which workspace files are memory, under which source name, and how a file becomes entries.

Pure functions: a file's bytes in, ``Entry`` records out. The index decides when to call them.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# front_matter: imported from here too (episodes)
from ..stores.provenance import UNTRUSTED_RECORD, front_matter, is_untrusted, json_records

# The owner's own memory, what people edit by hand: recall and search bring it up to date first
# (``MemoryIndex.refresh(roots)``: a stat per file, the changed ones re-read), so the next turn recalls a hand edit.
from ..workspace.private import HAND_EDITED as HAND_EDITED

#: (glob on the workspace-relative path, source name); first match wins.
#: ``{1}`` in a source name is replaced by the first path component after the prefix.
DEFAULT_SOURCES: tuple[tuple[str, str], ...] = (
    ("conversations/*/*.jsonl", "conversation"),
    ("memory/episodes/**", "episodes"),
    ("profile.md", "profile"),
    ("notes/**", "notes"),
    ("tasks/**", "tasks"),
    ("facts/**", "facts"),
    ("learnings/**", "learnings"),
    ("contacts/**", "contacts"),
    ("birthdays/**", "birthdays"),
    ("routines/**", "routines"),
    ("reminders/**", "reminders"),
    # The text of a document the owner sent (conversation/documents.py), not the file itself.
    ("inbox/*/*.text.md", "documents"),
    ("collectors/*/**", "collector:{1}"),
    ("skills-data/*/**", "skill:{1}"),
)


#: Files inside those folders that are not memory, so one item is found once: the collector runner's copy of
#: a run's new items (``new.json``) and its run log, a collector's digests (``digest/``: renderings for
#: reading of the records it keeps, e.g. the rss collector's ``items.jsonl``) and its catalogue of the files
#: it wrote (``index.jsonl``: the mail collector's line per message file, subject and snippet again).
NOT_MEMORY: tuple[str, ...] = (
    "collectors/*/new.json",
    "collectors/*/runs.jsonl",
    "collectors/*/digest/*",
    "collectors/*/index.jsonl",
)


#: Top-level folders (or files) a full refresh walks; everything else is never read.
def walk_roots(sources: Iterable[tuple[str, str]]) -> list[str]:
    """The first path component of every source glob, deduplicated."""
    roots: list[str] = []
    for pattern, _ in sources:
        head = pattern.split("/")[0]
        if head not in roots:
            roots.append(head)
    return roots


TEXT_SUFFIXES = (".md", ".txt", ".markdown", ".org", ".rst")
JSON_SUFFIXES = (".json",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CHUNK_CHARS = 700
_TIME_KEYS = ("time", "date", "when", "published", "updated", "created", "due", "start")
_SKIP_KEYS = {
    "id",
    "turn_id",
    "message_id",
    "hash",
    "source_ref",
    "history",
    "guid",
    "uid",
    "status",
    "superseded_by",
    "untrusted",
}
_GONE = {"superseded", "deleted"}


@dataclass
class Entry:
    """One searchable unit: a turn, a note chunk, a JSON record."""

    source: str
    path: str
    ref: str
    seq: int
    text: str
    time: str | None = None
    conversation: str | None = None
    role: str | None = None
    outside: bool = False  # a turn, record or file marked ``untrusted`` (its text came from outside)


def source_for(rel: str, sources: Iterable[tuple[str, str]] = DEFAULT_SOURCES) -> str | None:
    """The source name of a workspace-relative path, None when it is not memory."""
    name = rel.rsplit("/", 1)[-1]
    if name.startswith(".") or name.endswith(".lock") or ".tmp-" in name:
        return None
    if not name.endswith(TEXT_SUFFIXES + JSON_SUFFIXES + JSONL_SUFFIXES):
        return None
    if any(fnmatch.fnmatchcase(rel, pattern) for pattern in NOT_MEMORY):
        return None
    for pattern, source in sources:
        if fnmatch.fnmatchcase(rel, pattern):
            if "{1}" in source:
                prefix_len = len(pattern.split("*")[0].rstrip("/").split("/"))
                parts = rel.split("/")
                source = source.replace("{1}", parts[prefix_len] if len(parts) > prefix_len else "")
            return source
    return None


def is_appendable(rel: str) -> bool:
    """JSONL files are read incrementally from the last offset."""
    return rel.endswith(JSONL_SUFFIXES)


def parse_time(value: object) -> str | None:
    """An ISO-ish time string (or epoch number) normalised to ISO; None when not a time."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 10**8:
        return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")
    if not isinstance(value, str) or len(value) < 8:
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        return datetime.fromisoformat(text).isoformat(timespec="seconds")
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime

        return parsedate_to_datetime(value).isoformat(timespec="seconds")
    except (TypeError, ValueError, IndexError):
        return None


def time_to_ts(iso: str | None) -> float | None:
    """Epoch seconds of an ISO time (naive taken as UTC)."""
    if not iso:
        return None
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def turn_text(row: Mapping[str, object]) -> str:
    """What a logged turn contributes to search: speaker, text and any attachment caption."""
    text = str(row.get("text") or "")
    speaker = row.get("speaker")
    if speaker:
        text = f"{speaker}: {text}"
    caption = row.get("caption")
    if caption:
        text = f"{text} [image: {caption}]"
    images = row.get("images")
    if isinstance(images, list) and images:
        # A turn with pictures: its line names their files, so the model's description of one finds it.
        text = f"{text} [images: {', '.join(str(path) for path in images)}]"
    return text


def turn_entry(row: Mapping[str, object], rel: str, seq: int, source: str = "conversation") -> Entry | None:
    """An Entry for one L0 row; None for rows without text."""
    text = turn_text(row)
    if not text.strip():
        return None
    return Entry(
        source=source,
        path=rel,
        ref=str(row.get("turn_id") or f"L{seq}"),
        seq=seq,
        text=text,
        time=parse_time(row.get("time")),
        conversation=str(row["conversation"]) if row.get("conversation") is not None else None,
        role=str(row["role"]) if row.get("role") is not None else None,
        outside=bool(row.get("untrusted")),
    )


def jsonl_entries(lines: list[tuple[int, bytes]], rel: str, source: str) -> list[Entry]:
    """Entries for complete JSONL lines given as (line number, raw bytes); bad lines skipped."""
    entries: list[Entry] = []
    for number, raw in lines:
        try:
            row = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(row, dict):
            continue
        if source == "conversation":
            entry = turn_entry(row, rel, number, source)
        else:
            entry = record_entry(row, rel, f"L{number}", number, source)
        if entry is not None:
            entries.append(entry)
    return entries


def record_text(record: object) -> str:
    """A JSON record flattened to 'key: value' text (ids and history left out)."""
    if isinstance(record, dict):
        parts = []
        for key, value in record.items():
            if key in _SKIP_KEYS or value in (None, "", [], {}):
                continue
            inner = record_text(value)
            if inner:
                parts.append(f"{key}: {inner}")
        return "; ".join(parts)
    if isinstance(record, list):
        return ", ".join(filter(None, (record_text(v) for v in record)))
    return str(record)


def record_time(record: object) -> str | None:
    if isinstance(record, dict):
        for key in _TIME_KEYS:
            found = parse_time(record.get(key))
            if found:
                return found
    return None


def record_entry(
    record: Any, rel: str, ref: str, seq: int, source: str, default_time: str | None = None
) -> Entry | None:
    """An Entry for one JSON record; None for empty, superseded or deleted records. A record
    marked ``"untrusted": true`` (a fact taken from outside content) is outside."""
    if isinstance(record, dict) and record.get("status") in _GONE:
        return None
    text = record_text(record)
    if not text.strip():
        return None
    return Entry(
        source=source,
        path=rel,
        ref=ref,
        seq=seq,
        text=text[:4000],
        time=record_time(record) or default_time,
        outside=is_untrusted(record),
    )


def json_entries(data: bytes, rel: str, source: str, default_time: str | None) -> list[Entry]:
    """One entry per record of a JSON list (or of the list inside a one-list object, or per value of
    an object of objects; ``provenance.json_records``); a record is outside when it, or the
    one-list object around it, is marked ``"untrusted": true``. A file that does not parse is
    indexed as text, all outside when it holds a marked record anywhere (a marked document that
    an append made unparseable keeps its mark)."""
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        entries = text_entries(data, rel, source, default_time)
        if UNTRUSTED_RECORD.search(data.decode("utf-8", errors="replace")):
            for entry in entries:
                entry.outside = True
        return entries
    records = json_records(obj)
    if records is None:
        whole = record_entry(obj, rel, "all", 1, source, default_time)
        return [whole] if whole else []
    outer = is_untrusted(obj)  # a one-list object marked as a whole: every record in it is outside
    entries = []
    for i, record in enumerate(records):
        made = record_entry(record, rel, f"[{i}]", i + 1, source, default_time)
        if made is not None:
            made.outside = made.outside or outer
            entries.append(made)
    return entries


def text_entries(data: bytes, rel: str, source: str, default_time: str | None) -> list[Entry]:
    """Markdown/plain text split into paragraph chunks of about CHUNK_CHARS, refs 'L<a>-<b>'.

    ``untrusted: true`` in front matter (an episode of a day with outside content, a note or file a
    skill wrote in an untrusted turn) makes every chunk outside; front matter with an ``untrusted`` key is metadata
    and left out of the text
    (any other file is indexed whole, as it always was)."""
    text = data.decode("utf-8", errors="replace")
    meta, skip = front_matter(text)
    if "untrusted" not in meta:
        skip = 0
    outside = is_untrusted(meta)
    entries: list[Entry] = []
    chunk: list[str] = []
    start = 1
    heading = ""

    def flush(end: int) -> None:
        body = "\n".join(chunk).strip()
        if body:
            if heading and not body.startswith(heading):
                body = f"{heading}\n{body}"
            entries.append(Entry(source, rel, f"L{start}-{end}", len(entries) + 1, body, default_time, outside=outside))

    lines = text.splitlines()
    size = 0
    for number, line in enumerate(lines, 1):
        if number <= skip:
            continue
        if line.startswith("#"):
            if chunk:
                flush(number - 1)
                chunk, size = [], 0
            heading = line.strip()
            start = number
        if not chunk:
            start = number
        chunk.append(line)
        size += len(line) + 1
        if size >= CHUNK_CHARS or (not line.strip() and size >= CHUNK_CHARS // 2):
            flush(number)
            chunk, size = [], 0
    if chunk:
        flush(len(lines))
    return entries


def file_entries(data: bytes, rel: str, source: str, default_time: str | None) -> list[Entry]:
    """All entries of a whole file, by its type."""
    if rel.endswith(JSONL_SUFFIXES):
        return jsonl_entries(list(enumerate(data.splitlines(), 1)), rel, source)
    if rel.endswith(JSON_SUFFIXES):
        return json_entries(data, rel, source, default_time)
    return text_entries(data, rel, source, default_time)
