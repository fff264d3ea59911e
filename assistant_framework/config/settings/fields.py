"""How a settings record reads its config section: one dataclass field per key, its default, its reader, its bounds.

A record is a frozen dataclass whose field names are the section's keys. Each field's metadata
says how to read the key's JSON value (``reads``: a reader of ``settings/readers.py`` and the
key's bounds), or that the key holds a nested record (``nests``), a list of records (``lists``) or
records by name (``keyed``). ``read_record`` builds the record from a section: a key that is
absent, or null where null is not a value of its own, keeps the field's default. The field is the
one place a key is described: its default, its type and its bounds; ``documented`` lists every key
with its default (``config get``/``show``, the test that holds ``config/README.md`` to the code) and
``config/schema.py`` derives the JSON Schema that validates the config.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, NamedTuple, Protocol, TypeVar

from assistant_framework.config.errors import ConfigError
from assistant_framework.config.settings.readers import (
    Reader,
    flag,
    frozen,
    json_object,
    mapping_of,
    maybe,
    number,
    one_of,
    strings,
    text,
    whole,
    wholes,
)
from assistant_framework.json_types import JsonSchema

# The readers are named here too: a record imports everything it describes its keys with from one module.
__all__ = [
    "REQUIRED",
    "KeyDoc",
    "Record",
    "as_json",
    "beside",
    "documented",
    "flag",
    "frozen",
    "json_object",
    "key_docs",
    "key_of",
    "keyed",
    "lists",
    "mapping_of",
    "maybe",
    "named",
    "nests",
    "number",
    "one_of",
    "read_record",
    "reads",
    "record_defaults",
    "required_keys",
    "schema_of",
    "strings",
    "text",
    "whole",
    "wholes",
]

_READ = "read"
_NULL = "null"  # null is a value of its own (``temperature: null`` omits the field), not "the default"
_NESTED = "nested"  # the key holds a record of its own (``memory.recall``)
_ITEMS = "items"  # the key holds a list of records (``llm.runners``)
_SHORTHAND = "shorthand"  # the field of a nested record a bare boolean sets
_KEYED = "keyed"  # the key holds an object of records by name (``mcp.servers``)
_NAME = "name"  # the field holds the record's name in its keyed object, not a key of its own
_KEY = "key"  # the config key when it cannot be the field's name (``mail.from``: a Python keyword)
_BOUNDS = "bounds"  # JSON Schema keywords the key's value must also meet (``minimum``, ``pattern``)
_EACH = "each"  # JSON Schema keywords every item of a list, or value of an object, must also meet
_BESIDE = "beside"  # not a key: what a record holds beside its keys (``Settings.sections``)

#: A key whose record field has no default (``runners[].model``): the key must be given.
REQUIRED = object()


class Record(Protocol):
    """A settings record: a dataclass (``__dataclass_fields__`` is what ``dataclasses.fields`` reads)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


R = TypeVar("R", bound=Record)


def reads(
    read: Reader[object],
    *,
    null: bool = False,
    key: str | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    pattern: str | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    each: JsonSchema | None = None,
    schema: JsonSchema | None = None,
) -> dict[str, object]:
    """Field metadata: the key's JSON value goes through ``read``; with ``null`` a null is kept as None;
    ``key`` is the config key when it cannot be the field's name (a Python keyword such as ``from``).

    The bounds are JSON Schema keywords the value must meet as well as the reader's type: ``minimum``,
    ``maximum``, ``above`` (``exclusiveMinimum``), ``pattern``, ``min_length``, ``max_length``; ``each``
    adds keywords to every item of a list or value of an object, ``schema`` any other keyword
    (``uniqueItems``, ``propertyNames``)."""
    named_bounds = {
        "minimum": minimum,
        "maximum": maximum,
        "exclusiveMinimum": above,
        "pattern": pattern,
        "minLength": min_length,
        "maxLength": max_length,
    }
    bounds: JsonSchema = {name: value for name, value in named_bounds.items() if value is not None}
    return {_READ: read, _NULL: null, _KEY: key, _BOUNDS: {**bounds, **(schema or {})}, _EACH: each or {}}


def key_of(item: dataclasses.Field[Any]) -> str:
    """The config key a record's field reads: its ``key`` metadata, else the field's name."""
    return item.metadata.get(_KEY) or item.name


def nests(record: type[Record], *, shorthand: str | None = None) -> dict[str, object]:
    """Field metadata: the key holds a record of its own. ``shorthand`` names the field a bare boolean sets
    (``"episodes": false`` is ``{"enabled": false}``)."""
    return {_NESTED: record, _SHORTHAND: shorthand}


def lists(record: type[Record], *, min_items: int | None = None, max_items: int | None = None) -> dict[str, object]:
    """Field metadata: the key holds a list of records (``llm.runners``), read into a tuple; a list shorter than
    ``min_items`` or longer than ``max_items`` is refused."""
    bounds = {"minItems": min_items, "maxItems": max_items}
    return {_ITEMS: record, _BOUNDS: {name: value for name, value in bounds.items() if value is not None}}


def keyed(record: type[Record], *, names: str | None = None, max_entries: int | None = None) -> dict[str, object]:
    """Field metadata: the key holds an object of records by name (``mcp.servers``), read into a
    read-only mapping; the record's ``named()`` field gets each entry's name. ``names`` is the pattern
    every name must match, ``max_entries`` the most entries."""
    bounds: JsonSchema = {}
    if names is not None:
        bounds["propertyNames"] = {"pattern": names}
    if max_entries is not None:
        bounds["maxProperties"] = max_entries
    return {_KEYED: record, _BOUNDS: bounds}


def named() -> dict[str, object]:
    """Field metadata: the record's name in its keyed object (not read from the entry, not documented)."""
    return {_NAME: True}


def beside() -> dict[str, object]:
    """Field metadata: the field is not a key of the section (no schema, no default documented, not read from
    the config): what the record holds beside its keys, set by the code that builds it."""
    return {_BESIDE: True}


def _keys(record: type[Record] | Record) -> list[dataclasses.Field[Any]]:
    """The record's fields that are keys of its section."""
    return [item for item in dataclasses.fields(record) if not item.metadata.get(_BESIDE)]


def required_keys(record: type[Record]) -> list[str]:
    """The keys of a record that have no default (each must be given)."""
    return [key_of(item) for item in _keys(record) if _default_of(item) is REQUIRED and not item.metadata.get(_NAME)]


def read_record(record: type[R], section: object, *, where: str = "") -> R:
    """The record read from a config section (a dict; anything else reads as empty). A value the field
    cannot take is a ConfigError naming the key (``where`` is the section's own key); a required key that
    is missing too."""
    raw: Mapping[str, Any] = section if isinstance(section, Mapping) else {}
    values: dict[str, object] = {}
    for item in _keys(record):
        if item.metadata.get(_NAME):
            continue
        key = f"{where}.{key_of(item)}" if where else key_of(item)
        value = raw.get(key_of(item))
        if value is None and not (key_of(item) in raw and item.metadata.get(_NULL)):
            if _default_of(item) is REQUIRED:
                raise ConfigError(f"{key}: missing (it has no default)")
            continue
        values[item.name] = _read_value(item, value, key)
    return record(**values)


def _read_value(item: dataclasses.Field[Any], value: Any, key: str) -> object:
    nested: type[Record] | None = item.metadata.get(_NESTED)
    items: type[Record] | None = item.metadata.get(_ITEMS)
    by_name: type[Record] | None = item.metadata.get(_KEYED)
    try:
        if by_name is not None:
            if not isinstance(value, Mapping):
                raise TypeError(f"expected an object, got {type(value).__name__}")
            return frozen({str(name): _named(by_name, name, entry, f"{key}.{name}") for name, entry in value.items()})
        if nested is not None:
            shorthand = item.metadata.get(_SHORTHAND)
            if shorthand is not None and isinstance(value, bool):
                value = {shorthand: value}
            if not isinstance(value, Mapping):
                raise TypeError(f"expected an object, got {type(value).__name__}")
            return read_record(nested, value, where=key)
        if items is not None:
            if not isinstance(value, (list, tuple)):
                raise TypeError(f"expected a list, got {type(value).__name__}")
            return tuple(read_record(items, entry, where=f"{key}[{index}]") for index, entry in enumerate(value))
        read: Callable[[Any], object] = item.metadata[_READ]
        return read(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key}: {_short(value)} cannot be read: {exc}") from None


def _named(record: type[R], name: object, entry: object, where: str) -> R:
    read = read_record(record, entry, where=where)
    names = [item.name for item in dataclasses.fields(record) if item.metadata.get(_NAME)]
    return dataclasses.replace(read, **{field_name: str(name) for field_name in names})


def _short(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:59] + "…"


def _default_of(item: dataclasses.Field[Any]) -> object:
    if item.default is not dataclasses.MISSING:
        return item.default
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return REQUIRED


def as_json(value: object) -> object:
    """A record or a field's value as JSON data: records and mappings as dicts, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {key_of(item): as_json(getattr(value, item.name)) for item in _keys(value)}
    if isinstance(value, Mapping):
        return {str(key): as_json(item) for key, item in value.items()}
    if isinstance(value, (tuple, list, frozenset)):
        return [as_json(item) for item in value]
    return value


def record_defaults(record: type[Record]) -> dict[str, object]:
    """Every key of a record with its default as JSON (nested records as dicts; required keys left out)."""
    out: dict[str, object] = {}
    for item in _keys(record):
        nested = item.metadata.get(_NESTED)
        if nested is not None:
            out[item.name] = record_defaults(nested)
            continue
        default = _default_of(item)
        if default is not REQUIRED:
            out[key_of(item)] = as_json(default)
    return out


class KeyDoc(NamedTuple):
    """One key as config/README.md documents it."""

    key: str
    default: object  # as JSON; REQUIRED for a key without a default
    schema: JsonSchema  # the values it takes (settings/values.py says them in words)


def documented(record: type[Record]) -> Iterator[tuple[str, object]]:
    """``(key, default as JSON)`` for every key of a record (``key_docs``); ``REQUIRED`` for a key without one."""
    return ((doc.key, doc.default) for doc in key_docs(record))


def key_docs(record: type[Record], prefix: str = "") -> Iterator[KeyDoc]:
    """Every key of a record, as config/README.md writes them: nested keys with dots (``recall.limit``), the
    keys of a list's records with ``[]`` (``runners[].model``), those of records by name with ``<name>``
    (``servers.<name>.url``); each with its default and its schema."""
    for item in _keys(record):
        if item.metadata.get(_NAME):
            continue
        key = prefix + key_of(item)
        nested = item.metadata.get(_NESTED)
        if nested is not None:
            yield from key_docs(nested, key + ".")
            continue
        default = _default_of(item)
        yield KeyDoc(key, default if default is REQUIRED else as_json(default), _field_schema(item))
        items = item.metadata.get(_ITEMS)
        if items is not None:
            yield from key_docs(items, key + "[].")
        by_name = item.metadata.get(_KEYED)
        if by_name is not None:
            yield from key_docs(by_name, key + ".<name>.")


def schema_of(record: type[Record]) -> JsonSchema:
    """The JSON Schema of a record's section, derived from its fields: each key's reader and bounds, nested
    records in place, the keys without a default required, and any other key refused (a typo is reported,
    not ignored). A record's ``SCHEMA_RULES`` (a ClassVar) adds what spans keys (``if enabled then ...``)."""
    keys = [item for item in _keys(record) if not item.metadata.get(_NAME)]
    schema: JsonSchema = {
        "type": "object",
        "properties": {key_of(item): _field_schema(item) for item in keys},
        "additionalProperties": False,
    }
    required = [key_of(item) for item in keys if _default_of(item) is REQUIRED]
    if required:
        schema["required"] = required
    rules: JsonSchema = getattr(record, "SCHEMA_RULES", {})
    return {**schema, **copy.deepcopy(rules)}


def _field_schema(item: dataclasses.Field[Any]) -> JsonSchema:
    meta = item.metadata
    bounds: JsonSchema = copy.deepcopy(meta.get(_BOUNDS) or {})
    nested: type[Record] | None = meta.get(_NESTED)
    if nested is not None:
        inner = schema_of(nested)
        return {"oneOf": [{"type": "boolean"}, inner]} if meta.get(_SHORTHAND) else inner
    items: type[Record] | None = meta.get(_ITEMS)
    if items is not None:
        return {"type": "array", "items": schema_of(items), **bounds}
    by_name: type[Record] | None = meta.get(_KEYED)
    if by_name is not None:
        return {"type": "object", "additionalProperties": schema_of(by_name), **bounds}
    read: Reader[object] = meta[_READ]
    schema = read.schema
    each: JsonSchema = meta.get(_EACH) or {}
    if each:
        inner_key = "items" if "items" in schema else "additionalProperties"
        schema[inner_key] = {**schema[inner_key], **copy.deepcopy(each)}
    return {**schema, **bounds}
