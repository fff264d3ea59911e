"""The ``untrusted`` mark: data written from outside content keeps saying so.

A turn is untrusted when outside content entered it (a forward, an attachment, a mail or web
page a skill read). What a skill stores in such a turn may be that content's words, so it is
stored marked, in the two forms the memory index reads:

- a JSON record (a task, a reminder, a contact, a fact...) carries ``"untrusted": true``;
- a text file (a note, a learnings topic, a Markdown or plain-text file) starts with the front
  matter ``---`` / ``untrusted: true`` / ``---``, merged into front matter the file already has.

Records and files without the mark (every older file) are the owner's. The mark is the owner's to
remove: delete the key or the line (or set it to ``false``) and the item counts as trusted.
"""

from __future__ import annotations

import json
from typing import Any

UNTRUSTED_KEY = "untrusted"
UNTRUSTED_FRONT_MATTER = "---\nuntrusted: true\n---\n"
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
    ``- item`` lines after a key continue its (YAML) value and are skipped."""
    lines = text.splitlines()
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
    ``untrusted`` line replaced), or a new block before it."""
    meta, size = front_matter(text)
    if not size:
        return UNTRUSTED_FRONT_MATTER + text
    lines = text.splitlines(keepends=True)
    block = [line for line in lines[1:size - 1]
             if line[:1].isspace() or line.partition(":")[0].strip().lower() != UNTRUSTED_KEY]
    return f"---\n{UNTRUSTED_KEY}: true\n" + "".join(block) + "".join(lines[size - 1:])


def mark_record(record: dict) -> dict:
    """Set the mark on a record in place and return it."""
    record[UNTRUSTED_KEY] = True
    return record


def shown(record: dict) -> dict:
    """A record for a skill result: a marked one with ``"untrusted": true`` first, so the mark is
    still in the text when a long result is cut (the bot then treats the turn as untrusted)."""
    if not is_untrusted(record):
        return record
    return {UNTRUSTED_KEY: True, **{k: v for k, v in record.items() if k != UNTRUSTED_KEY}}


def mark_json(obj: Any) -> Any:
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
    could be marked: front matter for text files, ``"untrusted": true`` in the records of JSON (a
    document that parses) and JSON Lines (each object line). Other files come back unchanged."""
    name = rel.lower()
    if name.endswith(MARKABLE_TEXT_SUFFIXES):
        return mark_text(content), True
    if name.endswith(MARKABLE_JSON_SUFFIXES):
        try:
            obj = json.loads(content)
        except ValueError:
            return content, False
        if not isinstance(obj, (dict, list)):
            return content, False
        text = json.dumps(mark_json(obj), indent=2, ensure_ascii=False) + "\n"
        return text, f'"{UNTRUSTED_KEY}": true' in text
    if name.endswith(MARKABLE_JSONL_SUFFIXES):
        out, marked = [], False
        for line in content.splitlines(keepends=True):
            try:
                row = json.loads(line)
            except ValueError:
                out.append(line)
                continue
            if isinstance(row, dict):
                out.append(json.dumps(mark_record(row), ensure_ascii=False) + ("\n" if line.endswith("\n") else ""))
                marked = True
            else:
                out.append(line)
        return "".join(out), marked
    return content, False
