"""How a settings record reads its config section: one dataclass field per key, its default and its reader.

A record is a frozen dataclass whose field names are the section's keys. Each field's metadata
says how to read the key's JSON value (``reads``), or that the key holds a nested record
(``nests``) or a list of records (``lists``). ``read_record`` builds the record from a section:
a key that is absent, or null where null is not a value of its own, keeps the field's default.
The field's default is the one place that default is written; ``documented`` lists every key with
it, for ``config get``/``show`` and for the test that holds ``config/README.md`` to the code.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, TypeVar

from assistant_framework.config.errors import ConfigError

T = TypeVar("T")
V = TypeVar("V")

_READ = "read"
_NULL = "null"  # null is a value of its own (``temperature: null`` omits the field), not "the default"
_NESTED = "nested"  # the key holds a record of its own (``memory.recall``)
_ITEMS = "items"  # the key holds a list of records (``llm.runners``)
_SHORTHAND = "shorthand"  # the field of a nested record a bare boolean sets
_KEYED = "keyed"  # the key holds an object of records by name (``mcp.servers``)
_NAME = "name"  # the field holds the record's name in its keyed object, not a key of its own
_KEY = "key"  # the config key when it cannot be the field's name (``mail.from``: a Python keyword)

#: A key whose record field has no default (``runners[].model``): the key must be given.
REQUIRED = object()


class Record(Protocol):
    """A settings record: a dataclass (``__dataclass_fields__`` is what ``dataclasses.fields`` reads)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


R = TypeVar("R", bound=Record)


def reads(read: Callable[[Any], object], *, null: bool = False, key: str | None = None) -> dict[str, object]:
    """Field metadata: the key's JSON value goes through ``read``; with ``null`` a null is kept as None;
    ``key`` is the config key when it cannot be the field's name (a Python keyword such as ``from``)."""
    return {_READ: read, _NULL: null, _KEY: key}


def key_of(item: dataclasses.Field[Any]) -> str:
    """The config key a record's field reads: its ``key`` metadata, else the field's name."""
    return item.metadata.get(_KEY) or item.name


def nests(record: type[Record], *, shorthand: str | None = None) -> dict[str, object]:
    """Field metadata: the key holds a record of its own. ``shorthand`` names the field a bare boolean sets
    (``"episodes": false`` is ``{"enabled": false}``)."""
    return {_NESTED: record, _SHORTHAND: shorthand}


def lists(record: type[Record]) -> dict[str, object]:
    """Field metadata: the key holds a list of records (``llm.runners``), read into a tuple."""
    return {_ITEMS: record}


def keyed(record: type[Record]) -> dict[str, object]:
    """Field metadata: the key holds an object of records by name (``mcp.servers``), read into a
    read-only mapping; the record's ``named()`` field gets each entry's name."""
    return {_KEYED: record}


def named() -> dict[str, object]:
    """Field metadata: the record's name in its keyed object (not read from the entry, not documented)."""
    return {_NAME: True}


def read_record(record: type[R], section: object, *, where: str = "") -> R:
    """The record read from a config section (a dict; anything else reads as empty). A value the field
    cannot take is a ConfigError naming the key (``where`` is the section's own key); a required key that
    is missing too."""
    raw: Mapping[str, Any] = section if isinstance(section, Mapping) else {}
    values: dict[str, Any] = {}
    for item in dataclasses.fields(record):
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
        return {key_of(item): as_json(getattr(value, item.name)) for item in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): as_json(item) for key, item in value.items()}
    if isinstance(value, (tuple, list, frozenset)):
        return [as_json(item) for item in value]
    return value


def record_defaults(record: type[Record]) -> dict[str, object]:
    """Every key of a record with its default as JSON (nested records as dicts; required keys left out)."""
    out: dict[str, object] = {}
    for item in dataclasses.fields(record):
        nested = item.metadata.get(_NESTED)
        if nested is not None:
            out[item.name] = record_defaults(nested)
            continue
        default = _default_of(item)
        if default is not REQUIRED:
            out[key_of(item)] = as_json(default)
    return out


def documented(record: type[Record], prefix: str = "") -> Iterator[tuple[str, object]]:
    """``(key, default as JSON)`` for every key of a record, as config/README.md writes them: nested keys
    with dots (``recall.limit``), the keys of a list's records with ``[]`` (``runners[].model``), those of
    records by name with ``<name>`` (``servers.<name>.url``); a key without a default gives ``REQUIRED``."""
    for item in dataclasses.fields(record):
        if item.metadata.get(_NAME):
            continue
        key = prefix + key_of(item)
        nested = item.metadata.get(_NESTED)
        if nested is not None:
            yield from documented(nested, key + ".")
            continue
        default = _default_of(item)
        yield key, default if default is REQUIRED else as_json(default)
        items = item.metadata.get(_ITEMS)
        if items is not None:
            yield from documented(items, key + "[].")
        by_name = item.metadata.get(_KEYED)
        if by_name is not None:
            yield from documented(by_name, key + ".<name>.")


# -- readers of JSON values ------------------------------------------------------------------


def text(value: Any) -> str:
    """A string key."""
    return str(value)


def whole(value: Any) -> int:
    """An integer key (a bool is no number)."""
    if isinstance(value, bool):
        raise TypeError("expected a number, got a boolean")
    return int(value)


def number(value: Any) -> float:
    """A number key, as a float."""
    if isinstance(value, bool):
        raise TypeError("expected a number, got a boolean")
    return float(value)


def flag(value: Any) -> bool:
    """A boolean key."""
    return bool(value)


def maybe(read: Callable[[Any], T]) -> Callable[[Any], T | None]:
    """``read`` for a key where null is a value of its own (use with ``reads(..., null=True)``)."""

    def read_or_none(value: Any) -> T | None:
        return None if value is None else read(value)

    return read_or_none


def strings(value: Any) -> tuple[str, ...]:
    """A list of strings (ids given as numbers are read as their text)."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return tuple(str(item) for item in value)


def wholes(value: Any) -> tuple[int, ...]:
    """A list of integers."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return tuple(whole(item) for item in value)


def frozen(mapping: Mapping[str, V] | None = None) -> Mapping[str, V]:
    """A read-only mapping (the default of a mapping key, ``field(default_factory=frozen)``)."""
    return MappingProxyType(dict(mapping or {}))


def mapping_of(read: Callable[[Any], V], *, over: Mapping[str, V] | None = None) -> Callable[[Any], Mapping[str, V]]:
    """An object of ``read`` values, read-only; with ``over`` the given keys are merged over those."""

    def read_mapping(value: Any) -> Mapping[str, V]:
        if not isinstance(value, Mapping):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        return frozen({**(over or {}), **{str(key): read(item) for key, item in value.items()}})

    return read_mapping


def json_object(value: Any) -> Mapping[str, object]:
    """An object passed on as it is (``extra_body``), copied so the record never shares the config's dict."""
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return frozen(copy.deepcopy(dict(value)))


def one_of(*choices: str) -> Callable[[Any], str]:
    """A string that must be one of ``choices``."""

    def read_choice(value: Any) -> str:
        if str(value) not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return str(value)

    return read_choice
