"""The defaults ``config get``/``show`` fill in, derived from the settings records (no table of their own).

The records in ``assistant_framework/config/settings/`` are the one place a key's default is written;
``tests/test_config_defaults.py`` holds ``config/README.md`` to them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from assistant_framework.config.errors import ConfigData
from assistant_framework.config.settings import Settings
from assistant_framework.config.settings.fields import record_defaults

#: Every key of every section with its default, as JSON data (a key without a default is left out).
DEFAULTS: ConfigData = record_defaults(Settings)

_MISSING = object()


def default_of(path: tuple[str | int, ...]) -> object:
    """The documented default at ``path`` (a tuple of keys), or KeyError."""
    node: object = DEFAULTS
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

    filled: ConfigData = fill(DEFAULTS, data)
    return filled


def leaves(data: object, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], object]]:
    """Every leaf (scalar, list or empty dict) of a nested dict with its path."""
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from leaves(value, (*prefix, key))
    else:
        yield prefix, data
