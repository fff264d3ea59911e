"""Validation: JSON Schema plus the checks beyond it, every message as ``file: json.path: message``."""

from __future__ import annotations

import re
from typing import Any

import jsonschema

from assistant_framework.config.env import is_env_reference
from assistant_framework.config.errors import JsonPath, LoadedConfig, _display, format_json_path, shown_key
from assistant_framework.config.keys import get_key
from assistant_framework.config.schema import root_schema
from assistant_framework.config.sections import declared
from assistant_framework.config.settings import Settings
from assistant_framework.config.settings.fields import Record
from assistant_framework.json_types import JsonSchema


def validate_config(
    loaded: LoadedConfig, extra_schemas: dict[str, JsonSchema] | None = None, *, records: type[Record] = Settings
) -> list[str]:
    """All schema violations as ``file: json.path: message`` lines (empty when valid).

    The schema is the one ``records`` describe (the settings records: each key's type, default and bounds).
    ``extra_schemas`` maps a dotted key (``collectors.rss``) to a schema declared by a plugin.
    A ``"${NAME}"`` still in the data (read with ``env=False``, as ``config set`` does) is not
    checked: its value is, once it is substituted.
    """
    from assistant_framework.config.checks import semantic_errors  # checks beyond JSON Schema

    messages: list[str] = []
    checks: list[tuple[JsonPath, JsonSchema, Any]] = [((), root_schema(records), loaded.data)]
    for dotted, schema in (extra_schemas or {}).items():
        keys = tuple(dotted.split("."))
        value = get_key(loaded.data, dotted, default=None)
        if value is not None:
            checks.append((keys, schema, value))
    for prefix, schema, value in checks:
        validator = jsonschema.Draft202012Validator(schema)
        for error in sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path]):
            if is_env_reference(error.instance):
                continue
            full = prefix + tuple(error.absolute_path)
            if error.validator == "additionalProperties" and isinstance(error.instance, dict):
                messages += _unknown_keys(loaded, full, error)
                continue
            file, rel = loaded.source_of(full)
            messages.append(f"{_display(file)}: {format_json_path(rel)}: {_describe(error)}")
    for path, message in semantic_errors(loaded.data):
        if is_env_reference(get_key(loaded.data, path, default=None)):
            continue
        file, rel = loaded.source_of(path)
        messages.append(f"{_display(file)}: {format_json_path(rel)}: {message}")
    return messages


def _unknown_keys(loaded: LoadedConfig, at: JsonPath, error: jsonschema.ValidationError) -> list[str]:
    """One line per unknown key, naming the file that holds it (a local layer's file, or the tracked one)
    and the known key it is closest to."""
    from assistant_framework.config.checks import did_you_mean

    known = error.schema.get("properties") or {} if isinstance(error.schema, dict) else {}
    patterns = list((error.schema.get("patternProperties") or {}) if isinstance(error.schema, dict) else {})
    lines: list[str] = []
    if not isinstance(error.instance, dict):
        return lines
    for key in error.instance:
        if key in known or any(re.search(p, str(key)) for p in patterns):
            continue
        file, rel = loaded.source_of((*at, key))
        name = shown_key(key)
        hint = did_you_mean(str(key), known) if name == str(key) else ""
        lines.append(f"{_display(file)}: {format_json_path(rel)}: unknown key{hint} (see {_documented_in(at)})")
    return lines


def _documented_in(at: JsonPath) -> str:
    """Where a section's keys are listed: config/README.md, or a declared section's page (docs/<name>.md: a
    channel's, as docs/channels.md's walk writes it)."""
    section = at[0] if at else ""
    return f"docs/{section}.md" if isinstance(section, str) and section in declared() else "config/README.md"


def _describe(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return f"{error.message} (check the spelling; see config/README.md for the known keys)"
    return error.message
