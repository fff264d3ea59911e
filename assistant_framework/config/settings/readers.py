"""Readers of a key's JSON value, each with the JSON Schema of the values it takes.

A reader turns the value a config key holds into the field's Python value (``whole("5")`` is no
int: the schema refused it before). Its ``schema`` is what ``config validate`` checks the value
against: the settings records carry both, so a key's type is written once (``config/schema.py``
derives the config's JSON Schema from them).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from assistant_framework.json_types import JsonSchema

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
V = TypeVar("V")

#: What each pattern a record uses means, in words (config/README.md's values column: settings/values.py).
PATTERN_WORDS: dict[str, str] = {}


def pattern(regex: str, words: str) -> str:
    """A pattern for ``reads(..., pattern=)`` or ``each=``, with what it means in a few words (a noun phrase:
    ``"an http(s) address"``); the README says the words, never the regex."""
    PATTERN_WORDS[regex] = words
    return regex


#: A base address as users write it: ``http://`` or ``https://`` first.
HTTP_URL = pattern("^https?://", "an http(s) address")
#: An address as users write it, or empty (``telegram.base_url``: empty is Telegram's own).
URL_OR_EMPTY = pattern("^(https?://[^/\\s?#]+.*)?$", "an http(s) address or empty")
#: The name of an environment variable.
ENV_NAME = pattern("^[A-Za-z_][A-Za-z0-9_]{0,127}$", "a variable name")
#: The name of an environment variable, or empty.
OPTIONAL_ENV_NAME = pattern("^([A-Za-z_][A-Za-z0-9_]{0,127})?$", "a variable name or empty")
#: ``"HH:MM"`` local time (a morning digest).
CLOCK_TIME = pattern("^([01][0-9]|2[0-3]):[0-5][0-9]$", '"HH:MM"')


class Reader(Generic[T_co]):
    """A function from a key's JSON value to the field's value, and the JSON Schema of the values it takes."""

    __slots__ = ("_read", "_schema")

    def __init__(self, read: Callable[[object], T_co], schema: JsonSchema) -> None:
        self._read = read
        self._schema = schema

    def __call__(self, value: object) -> T_co:
        return self._read(value)

    @property
    def schema(self) -> JsonSchema:
        """A fresh copy: a caller may add bounds to it."""
        return copy.deepcopy(self._schema)


def _text(value: object) -> str:
    return str(value)


def _whole(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError("expected a number, got a boolean")
    return int(value)


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError("expected a number, got a boolean")
    return float(value)


def _flag(value: object) -> bool:
    return bool(value)


def _list(value: object) -> list[object] | tuple[object, ...]:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return value


#: A string key.
text: Reader[str] = Reader(_text, {"type": "string"})
#: An integer key (a bool is no number).
whole: Reader[int] = Reader(_whole, {"type": "integer"})
#: A number key, as a float.
number: Reader[float] = Reader(_number, {"type": "number"})
#: A boolean key.
flag: Reader[bool] = Reader(_flag, {"type": "boolean"})
#: A list of strings (ids given as numbers are read as their text).
strings: Reader[tuple[str, ...]] = Reader(
    lambda value: tuple(str(item) for item in _list(value)), {"type": "array", "items": {"type": "string"}}
)
#: A list of integers.
wholes: Reader[tuple[int, ...]] = Reader(
    lambda value: tuple(_whole(item) for item in _list(value)), {"type": "array", "items": {"type": "integer"}}
)


def maybe(read: Reader[T]) -> Reader[T | None]:
    """``read`` for a key where null is a value of its own (use with ``reads(..., null=True)``)."""
    schema = read.schema
    if "enum" in schema:
        schema["enum"] = [*schema["enum"], None]
    else:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        schema["type"] = [*kinds, "null"]
    return Reader(lambda value: None if value is None else read(value), schema)


def one_of(*choices: str) -> Reader[str]:
    """A string that must be one of ``choices``."""

    def read_choice(value: object) -> str:
        if str(value) not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return str(value)

    return Reader(read_choice, {"enum": list(choices)})


def frozen(mapping: Mapping[str, V] | None = None) -> Mapping[str, V]:
    """A read-only mapping (the default of a mapping key, ``field(default_factory=frozen)``)."""
    return MappingProxyType(dict(mapping or {}))


def mapping_of(read: Reader[V], *, over: Mapping[str, V] | None = None) -> Reader[Mapping[str, V]]:
    """An object of ``read`` values, read-only; with ``over`` the given keys are merged over those."""

    def read_mapping(value: object) -> Mapping[str, V]:
        if not isinstance(value, Mapping):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        return frozen({**(over or {}), **{str(key): read(item) for key, item in value.items()}})

    return Reader(read_mapping, {"type": "object", "additionalProperties": read.schema})


def _json_object(value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return frozen(copy.deepcopy(dict(value)))


#: An object passed on as it is (``extra_body``), copied so the record never shares the config's dict.
json_object: Reader[Mapping[str, object]] = Reader(_json_object, {"type": "object"})


def when_enabled(then: JsonSchema) -> JsonSchema:
    """A record's ``SCHEMA_RULES`` for a section that needs more once it is turned on: ``then`` applies when
    the section says ``"enabled": true`` (an enabled channel needs its account)."""
    return {"if": {"properties": {"enabled": {"const": True}}, "required": ["enabled"]}, "then": then}
