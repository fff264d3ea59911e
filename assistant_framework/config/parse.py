"""One config file, JSON or YAML, into a value: errors name the file and line, and the limits
of ``limits`` (no YAML aliases, bounded nesting) hold for every file read.

Files are UTF-8 (a leading BOM, as Windows Notepad writes it, is accepted); a key that appears
twice in one object is an error, not a silent "the last one wins"."""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypedDict

import yaml

from assistant_framework.config.errors import ConfigData, ConfigError, JsonPath, _display, format_json_path
from assistant_framework.config.limits import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    NestedTooDeep,
    NoAliasLoader,
    json_too_deep,
    too_deep,
)

CONFIG_SUFFIXES = (".json", ".yaml", ".yml")


class _ConfigLoader(NoAliasLoader):
    """``NoAliasLoader`` that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:  # noqa: D102 - PyYAML hook
        seen: set[Any] = set()
        for key_node, _value in node.value if isinstance(node, yaml.MappingNode) else ():
            key = self.construct_object(key_node, deep=True)
            try:
                twice = key in seen
            except TypeError:
                continue  # an unhashable key: PyYAML's own error follows
            if twice:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping; keep one", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


def json_duplicate_key(text: str) -> tuple[int, int, str] | None:
    """(line, column, key) of the first key that appears twice in one object of valid JSON text, or None."""
    stack: list[set[str] | None] = []  # a set of keys per open object, None per open array
    line, line_start, pos, size = 1, 0, 0, len(text)
    while pos < size:
        char = text[pos]
        if char == "\n":
            line, line_start = line + 1, pos + 1
        elif char in "{[":
            stack.append(set() if char == "{" else None)
        elif char in "]}" and stack:
            stack.pop()
        elif char == '"':
            end = pos + 1
            while end < size and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            after = end + 1
            while after < size and text[after] in " \t\r\n":
                after += 1
            if after < size and text[after] == ":" and stack and stack[-1] is not None:
                key = json.loads(text[pos : end + 1])
                if key in stack[-1]:
                    return line, pos - line_start + 1, key
                stack[-1].add(key)
            pos = end
        pos += 1
    return None


def _read_text(path: Path) -> str:
    """The file as text: UTF-8, a leading BOM dropped; ConfigError naming the line of a bad byte."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ConfigError(
                f"{_display(path)}: {size / 2**20:.1f} MB; a config file is at most "
                f"{MAX_FILE_BYTES // 2**20} MB (is it the right file?)"
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{_display(path)}: cannot read: {exc.strerror}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{_display(path)}: line {line}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the file as UTF-8"
        ) from None


def _parse_file(path: Path) -> Any:
    text = _read_text(path)
    if path.suffix == ".json":
        deep = json_too_deep(text)
        if deep is not None:
            raise ConfigError(
                f"{_display(path)}: line {deep[0]} column {deep[1]}: nested more than {MAX_DEPTH} levels deep"
            )
        try:
            value, repeated = _load_json(text) if text.strip() else ({}, False)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{_display(path)}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}"
            ) from None
        except ValueError as exc:  # NaN, Infinity, 1e999: Python reads them, JSON has no such numbers
            raise ConfigError(f"{_display(path)}: invalid JSON: {exc}") from None
        twice = json_duplicate_key(text) if repeated else None
        if twice:
            raise ConfigError(
                f"{_display(path)}: line {twice[0]} column {twice[1]}: invalid JSON: key {twice[2]!r} "
                "appears twice in one object; keep one"
            )
    else:
        try:
            value = yaml.load(text, Loader=_ConfigLoader)  # noqa: S506 - a SafeLoader that also refuses aliases
        except (NestedTooDeep, RecursionError):
            raise ConfigError(f"{_display(path)}: nested more than {MAX_DEPTH} levels deep") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
            raise ConfigError(f"{_display(path)}: {where}invalid YAML: {getattr(exc, 'problem', exc)}") from None
        value = {} if value is None else value
        found = _not_json(value)
        if found is not None:
            raise ConfigError(f"{_display(path)}: {format_json_path(found[0])}: {found[1]}")
    deep_path = too_deep(value)
    if deep_path is not None:
        raise ConfigError(f"{_display(path)}: {format_json_path(deep_path)}: nested more than {MAX_DEPTH} levels deep")
    return value


def _not_json(value: Any) -> tuple[JsonPath, str] | None:
    """(path, why) of the first YAML value JSON cannot hold (a date, a set, .nan, a key that is no text), or None."""
    stack: list[tuple[Any, JsonPath]] = [(value, ())]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    return where, f"the key {key!r} is not text; quote it"
                stack.append((child, (*where, key)))
        elif isinstance(node, list):
            stack.extend((child, (*where, index)) for index, child in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            shown = ".nan" if math.isnan(node) else ("-.inf" if node < 0 else ".inf")
            return where, f"{shown} is not a JSON number; write a number"
        elif isinstance(node, (datetime.date, datetime.time)):
            return where, f"{node} is a date, not a JSON value; quote it to keep it as text"
        elif isinstance(node, set):
            return where, "a set is not a JSON value; write a list"
        elif not isinstance(node, (str, int, float, bool)) and node is not None:
            kind = "binary" if isinstance(node, bytes) else type(node).__name__
            return where, f"a {kind} is not a JSON value"
    return None


def _load_json(text: str) -> tuple[Any, bool]:
    """The value of JSON text, and whether some object in it has a key twice (found where, only then)."""
    repeated = False

    def pairs(items: list[tuple[str, Any]]) -> ConfigData:
        nonlocal repeated
        value = dict(items)
        repeated = repeated or len(value) != len(items)
        return value

    return json.loads(text, object_pairs_hook=pairs, **FINITE_JSON), repeated


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large a number")
    return value


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number; write a number")


class FiniteJson(TypedDict):
    """The ``json.loads`` hooks of ``FINITE_JSON``, passed as ``**FINITE_JSON``."""

    parse_float: Callable[[str], float]
    parse_constant: Callable[[str], NoReturn]


#: ``json.loads`` hooks that refuse NaN, Infinity and 1e999 (Python's extensions; no model server reads them back).
FINITE_JSON: FiniteJson = {"parse_float": _finite_float, "parse_constant": _no_constant}
