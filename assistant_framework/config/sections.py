"""Sections a plugin declares: a record of its own under a top-level key that ``Settings`` does not name.

The framework imports no channel, so it cannot find a channel's record; the bot hands them over: ``declare``
takes a function that gives the declared records by section name (messaging_llm_bot/__init__.py declares
channels/sections.py's: each channel of the registry whose folder has a ``section.py``). From then on such a
record is one of the records every reader of the config reads, like the built-in ones: the schema
(``schema.root_schema``: the section known, its keys checked, a typo named with file and key and the closest
key), the checks' known sections and did-you-mean, ``config get/show``'s defaults (``defaults``), ``/reload``'s
comparison of the configs, and ``Settings.section`` (the typed record of a loaded config).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from assistant_framework.config.settings.fields import Record, key_docs, required_keys

#: A function that gives the records of the sections it declares, by section name.
Provider = Callable[[], Mapping[str, type[Record]]]

_providers: list[Provider] = []


def declare(provider: Provider) -> None:
    """Have the config read ``provider``'s sections from now on (asked each time: what it gives may change)."""
    if provider not in _providers:
        _providers.append(provider)


def declared() -> dict[str, type[Record]]:
    """Every declared section's record by its name. ValueError: two records for one name, or a record with a key
    that has no default (a section left out of the config reads as its record's defaults)."""
    found: dict[str, type[Record]] = {}
    for provider in _providers:
        for name, record in provider().items():
            if found.get(name, record) is not record:
                raise ValueError(f"config section {name!r} is declared twice: {found[name]!r} and {record!r}")
            required = required_keys(record)
            if required:
                raise ValueError(f"{record.__qualname__} (section {name!r}): {', '.join(required)} has no default")
            keys = {part for doc in key_docs(record) for part in _prefixes(doc.key)}
            unknown = sorted(set(reloaded_keys(record)) - keys)
            if unknown:
                raise ValueError(f"{record.__qualname__}.RELOADED_KEYS names no key of it: {', '.join(unknown)}")
            found[name] = record
    return found


def reloaded_keys(record: type[Record]) -> frozenset[str]:
    """The keys of a declared section that ``/reload`` applies (config/reloadable.py): its record's
    ``RELOADED_KEYS`` (a ClassVar, keys within the section: ``{"allowed", "owner"}``); every other key waits for
    a restart."""
    return frozenset(getattr(record, "RELOADED_KEYS", ()))


def _prefixes(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]
