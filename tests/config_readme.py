"""config/README.md's key tables read, and held to the settings records: each key, its default and its values; a
channel's own section (declared in its folder: messaging_llm_bot/channels/sections.py) the same way in its page,
docs/<name>.md.

A section's table (under ``## `section` ``) has the columns key, default, values, meaning. A row may
name several keys (`` `a` / `b` ``); its default and values cells then hold as many parts, separated by
`` / ``. A default cell is read as JSON (its first `code` span when it has one); an empty one is a key
without a default. A values cell is what ``values_text`` says of the key's schema (settings/values.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from assistant_framework.config.settings.fields import REQUIRED, KeyDoc, Record, key_docs
from assistant_framework.config.settings.values import values_text

README = Path(__file__).resolve().parent.parent / "config" / "README.md"
_SECTION = re.compile(r"^## `(\w+)`")
_CODE = re.compile(r"`([^`]*)`")


@dataclass(frozen=True)
class Row:
    """One key as a table of config/README.md gives it."""

    default: object  # REQUIRED for an empty cell
    values: str


def readme_rows(text: str) -> dict[str, Row]:
    """``section.key`` -> its default and values as the README's tables give them."""
    found: dict[str, Row] = {}
    section = None
    for line in text.splitlines():
        heading = _SECTION.match(line)
        if heading:
            section = heading.group(1)
            continue
        if section is None or not line.startswith("| `"):
            continue
        key_cell, default_cell, values_cell = (cell.strip() for cell in line.strip("|").split("|")[:3])
        keys = _CODE.findall(key_cell)
        defaults = default_cell.split(" / ") if len(keys) > 1 else [default_cell]
        values = values_cell.split(" / ") if len(keys) > 1 else [values_cell]
        assert len(defaults) == len(values) == len(keys), f"config/README.md: {key_cell}: parts for each key"
        for key, default, value in zip(keys, defaults, values, strict=True):
            assert f"{section}.{key}" not in found, f"config/README.md documents {section}.{key} twice"
            found[f"{section}.{key}"] = Row(default_value(default.strip()), value.strip())
    return found


def default_value(cell: str) -> object:
    if not cell:
        return REQUIRED
    code = _CODE.search(cell)
    literal = code.group(1) if code else cell
    try:
        return json.loads(literal)
    except ValueError:
        return literal


def same(documented_value: object, code_value: object) -> bool:
    """Equal as JSON data (``30`` is ``30.0``, but ``1`` is not ``true``)."""
    return documented_value == code_value and isinstance(documented_value, bool) == isinstance(code_value, bool)


def readme_differences(text: str, records: type[Record]) -> list[str]:
    """Where the README's tables and ``records`` disagree: keys on one side only, defaults, values."""
    return _differences(readme_rows(text), {doc.key: doc for doc in key_docs(records)}, "config/README.md")


def page_differences(text: str, section: str, record: type[Record], page: str) -> list[str]:
    """Where a page's table of a declared section (``page``: docs/<name>.md, the table under ``## `section` ``)
    and the section's record disagree, as ``readme_differences``."""
    rows = {key: row for key, row in readme_rows(text).items() if key.startswith(section + ".")}
    return _differences(rows, {doc.key: doc for doc in key_docs(record, section + ".")}, page)


def channel_pages_differences(docs: Path) -> list[str]:
    """``page_differences`` for every channel's own section (channels/sections.py), each in ``docs/<name>.md``."""
    from messaging_llm_bot.channels.sections import channel_sections

    problems: list[str] = []
    for name, record in channel_sections().items():
        page = docs / f"{name}.md"
        if not page.exists():
            problems.append(f"{name}: the channel's section is documented in no {page.name}")
            continue
        problems += page_differences(page.read_text(encoding="utf-8"), name, record, f"docs/{page.name}")
    return problems


def _differences(rows: dict[str, Row], docs: dict[str, KeyDoc], where: str) -> list[str]:
    problems = [f"{key}: the records have it, {where} does not" for key in docs if key not in rows]
    problems += [f"{key}: {where} has it, no record does" for key in rows if key not in docs]
    for key in rows.keys() & docs.keys():
        row, doc = rows[key], docs[key]
        if not same(row.default, doc.default):
            problems.append(f"{key}: default {row.default!r} in {where}, {doc.default!r} in the records")
        if row.values != values_text(doc.schema):
            problems.append(f"{key}: values {row.values!r} in {where}, {values_text(doc.schema)!r} in the records")
    return sorted(problems)
