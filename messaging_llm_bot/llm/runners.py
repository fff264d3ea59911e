"""Runner records of the `llm` config section: which OpenAI-compatible endpoints to call.

A runner is the config's ``RunnerSettings`` record (its defaults are there), resolved for calling:
the key read from ``api_key_env`` when ``api_key`` is empty, ``extra_body`` without the keys that
define the call, the base URL without a trailing slash.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence

from assistant_framework.config import ConfigError
from assistant_framework.config.settings import LLMSettings, RunnerSettings
from assistant_framework.config.settings.fields import frozen, read_record
from assistant_framework.config.settings.llm import STRUCTURED_OUTPUT, TOOL_TRANSPORTS

log = logging.getLogger(__name__)

# Keys a runner's extra_body may not override: they define the call itself.
RESERVED_KEYS = frozenset({"model", "messages", "stream"})
#: A runner ready to call (the record, resolved); the old name of the type.
RunnerConfig = RunnerSettings

__all__ = [
    "RESERVED_KEYS",
    "STRUCTURED_OUTPUT",
    "TOOL_TRANSPORTS",
    "RunnerConfig",
    "runners_from_config",
    "unset_key_variable",
    "vision_runner_names",
]


def vision_runner_names(llm: LLMSettings) -> tuple[str, ...]:
    """The runners a message with images goes to, in the order they are tried: ``llm.vision_runner`` first,
    then every other runner with ``vision: true``; empty when no runner takes images."""
    return vision_order(llm.vision_runner, llm.runners)


def vision_order(vision_runner: str, runners: Sequence[RunnerSettings]) -> tuple[str, ...]:
    """``vision_runner_names`` of a runner list (an unchecked section dict has none in its record)."""
    named = (vision_runner,) if vision_runner and any(r.name == vision_runner for r in runners) else ()
    return named + tuple(r.name for r in runners if r.vision and r.name not in named)


def runners_from_config(llm: LLMSettings | Mapping[str, object]) -> list[RunnerSettings]:
    """The runners to call, from the ``llm`` record (or section dict: ``runner_records``); raises ValueError
    naming a bad entry.

    `api_key_env` may name an environment variable holding the key, so the key need not sit in a
    config file.
    """
    records = llm.runners if isinstance(llm, LLMSettings) else runner_records(llm)
    if not records:
        raise ValueError(
            'llm.runners: no model server is configured; add one, e.g. [{"name": "local", '
            '"base_url": "http://127.0.0.1:8080/v1", "model": "<model name>"}], or run make setup'
        )
    return [_resolved(runner) for runner in records]


def runner_records(section: Mapping[str, object]) -> tuple[RunnerSettings, ...]:
    """The runners of an unchecked ``llm`` section dict (tests, ``eval --base-url``), read leniently: a
    top-level `base_url`/`model` without `runners` is one runner and a runner without a name is `runnerN`;
    ValueError names a bad entry."""
    entries = section.get("runners")
    if not entries and section.get("base_url"):
        entries = [section]
    if not isinstance(entries, list):
        return ()
    records = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ValueError(f"llm.runners[{i}]: must be an object with base_url and model")
        name = str(entry.get("name") or f"runner{i + 1}")
        for key in ("base_url", "model"):
            if not entry.get(key):
                raise ValueError(f"llm.runners[{i}].{key}: missing (runner {name!r})")
        known = {item.name for item in dataclasses.fields(RunnerSettings)}
        try:
            records.append(
                read_record(
                    RunnerSettings,
                    {k: v for k, v in entry.items() if k in known} | {"name": name},
                    where=f"llm.runners[{i}]",
                )
            )
        except ConfigError as exc:
            raise ValueError(f"{exc} (runner {name!r})") from None
        if records[-1].skill_choice == "two_step" and records[-1].tool_transport != "json":
            # Native tool calls carry name and arguments in one answer; two steps are for the JSON protocol.
            raise ValueError(
                f"llm.runners[{i}].skill_choice: two_step needs tool_transport json, "
                f"not {records[-1].tool_transport!r} (runner {name!r})"
            )
    return tuple(records)


def unset_key_variable(runner: RunnerSettings) -> str:
    """The variable ``api_key_env`` names when no key came from it (unset or empty) and none is configured;
    "" otherwise."""
    if runner.api_key or not runner.api_key_env or os.environ.get(runner.api_key_env):
        return ""
    return runner.api_key_env


def _resolved(runner: RunnerSettings) -> RunnerSettings:
    api_key = runner.api_key
    if not api_key and runner.api_key_env:
        api_key = os.environ.get(runner.api_key_env, "")
    extra = dict(runner.extra_body)
    ignored = sorted(RESERVED_KEYS & extra.keys())
    if ignored:
        log.warning("llm runner %r: extra_body keys %s are ignored", runner.name, ", ".join(ignored))
        extra = {k: v for k, v in extra.items() if k not in RESERVED_KEYS}
    return dataclasses.replace(runner, base_url=runner.base_url.rstrip("/"), api_key=api_key, extra_body=frozen(extra))
