"""One config file, JSON or YAML, into a value: errors name the file and line, and the limits
of ``limits`` (no YAML aliases, bounded nesting) hold for every file read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from assistant_framework.config.errors import ConfigError, _display, format_json_path
from assistant_framework.config.limits import MAX_DEPTH, NoAliasLoader, json_too_deep, too_deep

CONFIG_SUFFIXES = (".json", ".yaml", ".yml")


def _parse_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{_display(path)}: cannot read: {exc.strerror}") from None
    if path.suffix == ".json":
        deep = json_too_deep(text)
        if deep is not None:
            raise ConfigError(f"{_display(path)}: line {deep[0]} column {deep[1]}: nested more than {MAX_DEPTH} "
                              "levels deep")
        try:
            value = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{_display(path)}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from None
    else:
        try:
            value = yaml.load(text, Loader=NoAliasLoader)  # noqa: S506 - a SafeLoader that also refuses aliases
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
            raise ConfigError(f"{_display(path)}: {where}invalid YAML: {getattr(exc, 'problem', exc)}") from None
        except RecursionError:
            raise ConfigError(f"{_display(path)}: nested more than {MAX_DEPTH} levels deep") from None
        value = {} if value is None else value
    deep_path = too_deep(value)
    if deep_path is not None:
        raise ConfigError(f"{_display(path)}: {format_json_path(deep_path)}: nested more than {MAX_DEPTH} levels deep")
    return value
