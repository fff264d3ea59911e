"""The collector plugin contract: what a folder under ``collectors/`` gives and what its ``run`` returns.

A collector is a folder with ``__init__.py`` and ``README.md``; the folder name is its name and config key
(``collectors.<name>``). The module gives ``register_collector(config) -> dict`` (what the built-ins use):
``config`` is its config section, and the dict holds the fields below in lower case (``"description"``,
``"run"``...). Or, the same as module constants:

- ``DESCRIPTION: str``: one line, shown in the prompt.
- ``INTERVAL_SECONDS: float`` or ``CRON: str`` (five fields, in ``runtime.timezone``): its schedule; the
  config's ``interval_seconds`` / ``cron`` override it.
- ``GENERATED_FILES: list[str]`` and ``FILE_STRUCTURE: str``: what it writes, for the prompt.
- ``CONFIG_SCHEMA: dict`` (optional): the JSON Schema of ``collectors.<name>``.
- ``TIMEOUT_SECONDS: float`` (optional, default ``loader.DEFAULT_TIMEOUT_SECONDS``).
- ``run(workspace, config) -> CollectorResult`` (``CollectorRun``; in the dict form ``run(workspace)``,
  the config already bound), and optionally ``setup(config, workspace) -> int`` (an exit code).

``collectors.loader`` checks a folder against this contract. Two older forms still load this release, each
with a warning that names the form to use (``DEPRECATED_FORMS``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypedDict

from assistant_framework.json_types import JsonObject
from assistant_framework.workspace import Workspace

#: The registration function the built-ins use.
REGISTER = "register_collector"
#: The module constants the loader reads without a registration function (``run`` and ``setup`` besides).
CONSTANTS = (
    "DESCRIPTION",
    "FILE_STRUCTURE",
    "GENERATED_FILES",
    "INTERVAL_SECONDS",
    "CRON",
    "CONFIG_SCHEMA",
    "TIMEOUT_SECONDS",
)

#: The forms that still load with a warning, and what to write instead.
DEPRECATED_FORMS = {
    "create_collector": (
        "create_collector(config) is deprecated and will stop loading in the next release: "
        "name it register_collector(config) (the same dict)"
    ),
    "run_without_config": (
        "a module-level run(workspace) without the config is deprecated and will stop loading in the next "
        "release: use run(workspace, config)"
    ),
}


#: A collector's config section (``collectors.<name>``): its own keys, checked with its ``CONFIG_SCHEMA``, and
#: the framework's (``loader.FRAMEWORK_KEYS_SCHEMA``). JSON of the collector's own shape.
CollectorConfig = JsonObject
#: A collector's own cursor in ``state/collectors/<name>.json`` (last seen ids, ETags, UIDVALIDITY/UID): JSON only
#: it reads (``state.load_cursor`` / ``save_cursor``); never a secret.
CollectorCursor = JsonObject
#: One new item as the framework reads it (notices, ``notify`` rules, the ``ask`` rule's ranking and triage): the
#: collector's own record, as it appends it to its ``items.jsonl`` (the built-ins': ``FeedEntry``, ``MailItem``,
#: ``EventItem``). The framework reads its text keys (``title``, ``subject``, ``from``, ``feed``, ``summary``...)
#: and ``untrusted``, and writes none.
CollectorItem = Mapping[str, object]


class NotifyRule(TypedDict, total=False):
    """One ``collectors.<name>.notify`` rule (``loader.FRAMEWORK_KEYS_SCHEMA`` checks it)."""

    match: str  # "sender" | "keyword" | "feed" | "ask"
    value: str
    max_per_day: int  # the ask rule: items asked per day


class SourceReport(TypedDict, total=False):
    """One source's part of a run (a feed, a mail folder, a calendar), shown by ``collectors status NAME``."""

    ok: bool
    items: int
    error: str | None
    skipped: list[dict[str, str]]
    warnings: list[str]
    passed_over: int  # the RSS collector: entries over its per-feed cap, passed over for good


class SourceState(TypedDict, total=False):
    """One source's record in ``state/collectors/<name>.json`` after runs (``state.merge_sources``)."""

    ok: bool
    last_ok: str | None
    last_error: str | None
    last_error_at: str | None
    failures: int
    items: int
    skipped: list[dict[str, str]]
    warnings: list[str]


class CollectorResult(TypedDict, total=False):
    """What ``run`` may return; every key is optional, a key of the wrong type fails the run naming it."""

    new_items: Sequence[CollectorItem]
    summary: str
    errors: list[str]
    sources: dict[str, SourceReport]


class CollectorRun(Protocol):
    """A module-level collector ``run``: the workspace and its ``collectors.<name>`` config section."""

    def __call__(self, workspace: Workspace, config: CollectorConfig) -> CollectorResult | None: ...


class CollectorRegistration(TypedDict, total=False):
    """What ``register_collector(config)`` returns: the module constants' fields in lower case, and ``run`` with
    the config bound (``run(workspace)``)."""

    name: str
    description: str
    interval_seconds: float
    cron: str
    generated_files: list[str]
    file_structure: str
    config_schema: JsonObject
    timeout_seconds: float
    run: Callable[[Workspace], CollectorResult | None]
    setup: Callable[[CollectorConfig, Workspace], int]
