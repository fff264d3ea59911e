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


class SectionError(ValueError):
    """A declared section the config cannot take (a plugin's mistake, not the user's config): one sentence
    naming the section, its record and what is wrong."""


def declare(provider: Provider) -> None:
    """Have the config read ``provider``'s sections from now on (asked each time: what it gives may change)."""
    if provider not in _providers:
        _providers.append(provider)


def declared() -> dict[str, type[Record]]:
    """Every declared section's record by its name. ``SectionError``: two records for one name, a record with a
    key that has no default (a section left out of the config reads as its record's defaults), or one whose
    ``RELOADED_KEYS`` names a key it does not have."""
    found: dict[str, type[Record]] = {}
    for provider in _providers:
        for name, record in provider().items():
            if found.get(name, record) is not record:
                raise SectionError(
                    f"config section {name!r} is declared twice: by {_named(found[name])} and by {_named(record)}"
                )
            required = required_keys(record)
            if required:
                raise SectionError(
                    f"config section {name!r} ({_named(record)}): {', '.join(required)} has no default, and a "
                    "section left out of the config reads as its record's defaults"
                )
            keys = {part for doc in key_docs(record) for part in _prefixes(doc.key)}
            unknown = sorted(set(reloaded_keys(record)) - keys)
            if unknown:
                raise SectionError(
                    f"config section {name!r} ({_named(record)}): RELOADED_KEYS names {', '.join(unknown)}, "
                    "no key of the record"
                )
            found[name] = record
    return found


def _named(record: type[Record]) -> str:
    return f"{record.__module__}.{record.__qualname__}"


def reloaded_keys(record: type[Record]) -> frozenset[str]:
    """The keys of a declared section that ``/reload`` applies (config/reloadable.py): its record's
    ``RELOADED_KEYS`` (a ClassVar, keys within the section: ``{"allowed", "owner"}``); every other key waits for
    a restart."""
    return frozenset(getattr(record, "RELOADED_KEYS", ()))


def _prefixes(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]
