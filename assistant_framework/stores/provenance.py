"""The ``untrusted`` mark: data written from outside content keeps saying so.

A turn is untrusted when outside content entered it (a forward, an attachment, a mail or web
page a skill read). What a skill stores in such a turn may be that content's words, so it is
stored marked, in the two forms the memory index reads:

- a JSON record (a task, a reminder, a contact, a fact...) carries ``"untrusted": true``;
- a text file (a note, a learnings topic, a Markdown or plain-text file) starts with the front
  matter ``---`` / ``untrusted: true`` / ``---``, merged into front matter the file already has.

Records and files without the mark (every older file) are the owner's. The mark is the owner's to
remove: delete the key or the line (or set it to ``false``) and the item counts as trusted.

Whatever ``mark_text`` returns is read as marked (``is_marked_text``), and a JSON document counts as
marked only when every record the memory index makes of it carries the mark (``json_marked``; the
index walks it with the same ``json_records``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final, TypeVar, cast

UNTRUSTED_KEY: Final = "untrusted"
#: A record a store writes or a skill shows: a ``TypedDict`` row of ``records`` or a ``JsonObject``.
Record = TypeVar("Record", bound=Mapping[str, object])
UNTRUSTED_FRONT_MATTER = "---\nuntrusted: true\n---\n"
#: A JSON record marked as taken from outside content, as it appears in text (a result cut to text,
#: a JSON file that no longer parses).
UNTRUSTED_RECORD = re.compile(r'"untrusted"\s*:\s*true\b')
BOM = "\ufeff"
#: Files whose front matter the memory index reads (the same suffixes it indexes as text).
MARKABLE_TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".org", ".rst")
MARKABLE_JSON_SUFFIXES = (".json",)
MARKABLE_JSONL_SUFFIXES = (".jsonl", ".ndjson")
_FRONT_MATTER_LINES = 30


def is_untrusted(record: object) -> bool:
    """True when a record is marked as taken from outside content (``"untrusted": true``; a
    hand-written "false", "no" or 0, or no key at all, is the owner's)."""
    value = record.get(UNTRUSTED_KEY) if isinstance(record, dict) else None
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "no", "0", "off")
    return bool(value)


def front_matter(text: str) -> tuple[dict[str, str], int]:
    """``key: value`` lines between a first line ``---`` and the next ``---`` (lower-case keys),
    and how many lines that block takes; ({}, 0) when the text has none. Indented lines and
    ``- item`` lines after a key continue its (YAML) value and are skipped. A byte order mark
    before the first ``---`` (an editor's) is ignored; the block must close within
    ``_FRONT_MATTER_LINES`` lines."""
    lines = text.removeprefix(BOM).splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, 0
    found: dict[str, str] = {}
    keyed = False
    for number, line in enumerate(lines[1:_FRONT_MATTER_LINES], 2):
        if line.strip() == "---":
            return found, number
        if keyed and line.strip() and (line[:1].isspace() or line.startswith("- ")):
            continue  # a list item or folded value of the key above
        key, colon, value = line.partition(":")
        if not colon or not key.strip() or " " in key.strip():
            return {}, 0  # not metadata: a rule line opening ordinary text
        found[key.strip().lower()] = value.strip()
        keyed = True
    return {}, 0


def is_marked_text(text: str) -> bool:
    """True when a text file's front matter marks it as written from outside content."""
    return is_untrusted(front_matter(text)[0])


def split_marked(text: str) -> tuple[bool, str]:
    """(marked, text without the front matter) for a file whose front matter has an ``untrusted`` key;
    any other text comes back whole (its front matter is the file's own content)."""
    meta, size = front_matter(text)
    if UNTRUSTED_KEY not in meta:
        return False, text
    return is_untrusted(meta), "".join(text.splitlines(keepends=True)[size:])


def mark_text(text: str) -> str:
    """``text`` with ``untrusted: true`` in its front matter: added to the block it has (an existing
    ``untrusted`` line replaced), or a new block before it. A leading byte order mark stays first.
    The result always reads as marked (``is_marked_text``): when the merged block would not (it
    would close past the lines ``front_matter`` reads), a new block goes before the text instead."""
    bom = BOM if text.startswith(BOM) else ""
    body = text[len(bom) :]
    _meta, size = front_matter(text)  # read past one byte order mark, as ``body`` starts
    if size:
        lines = body.splitlines(keepends=True)
        newline = lines[0][len(lines[0].rstrip("\r\n")) :] or "\n"  # the file's own line ends (CRLF stays CRLF)
        block = [
            line
            for line in lines[1 : size - 1]
            if line[:1].isspace() or line.partition(":")[0].strip().lower() != UNTRUSTED_KEY
        ]
        merged = bom + f"---{newline}{UNTRUSTED_KEY}: true{newline}" + "".join(block) + "".join(lines[size - 1 :])
        if is_marked_text(merged):
            return merged
    return bom + UNTRUSTED_FRONT_MATTER + body


def mark_record(record: Record) -> Record:
    """Set the mark on a record in place and return it (a store's ``TypedDict`` row or a ``JsonObject``)."""
    cast(dict[str, object], record)[UNTRUSTED_KEY] = True  # every record is a dict at run time
    return record


def shown(record: Record) -> Record:
    """A record for a skill result: a marked one with ``"untrusted": true`` first, so the mark is
    still in the text when a long result is cut (the bot then treats the turn as untrusted)."""
    if not is_untrusted(record):
        return record
    return cast(Record, {UNTRUSTED_KEY: True, **{k: v for k, v in record.items() if k != UNTRUSTED_KEY}})


def quote_lines(text: str) -> str:
    """Every line of ``text`` prefixed with ``> ``: shown so, outside text cannot pass for a heading
    or a section of the prompt around it."""
    return "\n".join("> " + line for line in (text or "").splitlines() or [""])


def json_records(obj: object) -> list[Any] | None:
    """The records the memory index makes of a parsed JSON document: the items of a list, or of the
    one list of an object (of objects and strings), or the values of an object of objects (each with
    its name as ``key``); None when the document is one record, itself."""
    if isinstance(obj, list):
        return obj
    if isinstance(obj, dict):
        lists = [v for v in obj.values() if isinstance(v, list)]
        if len(lists) == 1 and all(isinstance(v, (dict, str)) for v in lists[0]):
            return lists[0]
        if obj and all(isinstance(v, dict) for v in obj.values()):
            return [{"key": k, **v} for k, v in obj.items()]
    return None


def json_marked(obj: object) -> bool:
    """True when every record the index makes of a parsed JSON document carries the mark: it is
    marked itself, or the document around it is (a marked one-list object). A string in a bare
    list, a scalar document or a list in a list cannot carry it."""
    records = json_records(obj)
    if records is None:
        return is_untrusted(obj)
    return is_untrusted(obj) or all(is_untrusted(record) for record in records)


def mark_json(obj: object) -> object:
    """Mark the records of a JSON document the way the memory index reads them (in place): each
    object of a list; the objects of a one-list object and the object itself; each value of an
    object of objects; else the object itself. Strings in a bare list cannot carry the mark."""
    if isinstance(obj, list):
        for item in obj:
            if isinstance(item, dict):
                mark_record(item)
    elif isinstance(obj, dict):
        lists = [v for v in obj.values() if isinstance(v, list)]
        if len(lists) == 1 and all(isinstance(v, (dict, str)) for v in lists[0]):
            mark_json(lists[0])
            mark_record(obj)
        elif obj and all(isinstance(v, dict) for v in obj.values()):
            for value in obj.values():
                mark_record(value)
        else:
            mark_record(obj)
    return obj


def mark_file_content(rel: str, content: str) -> tuple[str, bool]:
    """``content`` for the file ``rel`` with the mark in the form the index reads, and whether it
    is marked: front matter for text files; ``"untrusted": true`` in the records of a JSON
    document, which counts as marked only when it parses and every record the index makes of it
    carries the mark (``json_marked``); in each object row of JSON Lines (rows split where the index
    splits them: at ``\\n``, ``\\r\\n`` and ``\\r``). Other files come back unchanged, not marked."""
    name = rel.lower()
    if name.endswith(MARKABLE_TEXT_SUFFIXES):
        return mark_text(content), True
    if name.endswith(MARKABLE_JSON_SUFFIXES):
        try:  # parsed as the index parses the file: its bytes (a byte order mark, UTF-16 look-alikes)
            obj = json.loads(content.encode("utf-8"))
        except ValueError:
            return content, False
        if not isinstance(obj, (dict, list)):
            return content, False
        return json.dumps(mark_json(obj), indent=2, ensure_ascii=False) + "\n", json_marked(obj)
    if name.endswith(MARKABLE_JSONL_SUFFIXES):
        out, marked = [], False
        # Not str.splitlines: it also splits at U+2028, U+0085... which JSON strings may hold
        # raw; the index splits the bytes, so a row cut here would be indexed whole and unmarked.
        for line in re.split(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)", content):
            try:
                row = json.loads(line.encode("utf-8"))
            except ValueError:
                out.append(line)
                continue
            if isinstance(row, dict):
                end = line[len(line.rstrip("\r\n")) :]
                out.append(json.dumps(mark_record(row), ensure_ascii=False) + ("\n" if end else ""))
                marked = True
            else:
                out.append(line)
        return "".join(out), marked
    return content, False
