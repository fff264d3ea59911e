"""The defaults ``config get``/``show`` fill in, derived from the settings records (no table of their own).

The records in ``assistant_framework/config/settings/`` (and those of the declared sections: config/sections.py)
are the one place a key's default is written; ``tests/test_config_defaults.py`` holds ``config/README.md`` to them
(and a channel's docs page to its declared record).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from assistant_framework.config.errors import ConfigData
from assistant_framework.config.sections import declared
from assistant_framework.config.settings import Settings
from assistant_framework.config.settings.fields import record_defaults

_BUILT_IN: ConfigData = record_defaults(Settings)

_MISSING = object()


def documented_defaults() -> ConfigData:
    """Every key of every section (the declared ones too) with its default, as JSON data (a key without a default
    is left out). Not to be changed: the values are shared."""
    return {**_BUILT_IN, **{name: record_defaults(record) for name, record in declared().items()}}


def default_of(path: tuple[str | int, ...]) -> object:
    """The documented default at ``path`` (a tuple of keys), or KeyError."""
    node: object = documented_defaults()
    for part in path:
        if not isinstance(node, dict) or part not in node:
            raise KeyError(path)
        node = node[part]
    return node


def with_defaults(data: ConfigData) -> ConfigData:
    """``data`` with every documented default filled in where the key is absent (a new dict)."""

    def fill(base: Any, extra: Any) -> Any:
        if isinstance(base, dict) and isinstance(extra, dict):
            out = dict(extra)
            for key, value in base.items():
                out[key] = fill(value, extra.get(key, _MISSING)) if key in extra else value
            return out
        return base if extra is _MISSING else extra

    filled: ConfigData = fill(documented_defaults(), data)
    return filled


def leaves(data: object, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], object]]:
    """Every leaf (scalar, list or empty dict) of a nested dict with its path."""
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from leaves(value, (*prefix, key))
    else:
        yield prefix, data
