"""Loading one collector folder into a :class:`Collector` record.

A collector is ``<dir>/<name>/__init__.py`` plus ``README.md``, checked against the contract in
``collectors/spec.py`` (``register_collector(config)`` or module constants with ``run(workspace, config)``).
Each folder is imported once under a unique module name; any failure becomes a CollectorLoadError. A
deprecated form loads with a warning naming the form to use (``Collector.deprecated``).
"""

from __future__ import annotations

import copy
import inspect
import logging
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema

from assistant_framework.collectors.spec import DEPRECATED_FORMS, REGISTER, CollectorConfig, NotifyRule
from assistant_framework.config import format_json_path
from assistant_framework.json_types import JsonObject, JsonSchema
from assistant_framework.plugin_import import PluginImportError, import_plugin
from assistant_framework.schedules import validate_cron

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 300.0
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]*$")

#: Keys of ``collectors.<name>`` the framework itself reads.
FRAMEWORK_KEYS_SCHEMA: dict[str, JsonSchema] = {
    "enabled": {"type": "boolean"},
    "interval_seconds": {"type": "number", "exclusiveMinimum": 0},
    "cron": {"type": "string"},
    "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
    "timezone": {"type": "string"},
    "notify": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["match", "value"],
            "properties": {
                "match": {"enum": ["sender", "keyword", "feed", "ask"]},
                "value": {"type": "string", "minLength": 1},
                "max_per_day": {"type": "integer", "minimum": 1},  # ask: items asked per day (collectors/triage.py)
            },
            "additionalProperties": False,
        },
    },
}


@dataclass
class Collector:
    """A loaded collector plugin and its effective settings."""

    name: str
    description: str
    file_structure: str
    generated_files: list[str]
    interval_seconds: float | None
    cron: str | None
    run: Callable[..., object]
    folder: Path
    config: CollectorConfig
    enabled: bool
    timeout_seconds: float
    notify: list[NotifyRule]
    setup: Callable[..., object] | None = None
    config_schema: JsonSchema | None = None
    module: ModuleType | None = field(default=None, repr=False)
    #: What the folder uses of ``spec.DEPRECATED_FORMS``: one sentence each, naming the form to use.
    deprecated: list[str] = field(default_factory=list)


@dataclass
class CollectorLoadError:
    """A collector folder that could not be loaded, and why."""

    name: str
    folder: Path
    error: str
    #: The collector's declared schema when only its config was wrong (for file-named errors).
    config_schema: JsonSchema | None = None


def schema_problem(schema: object) -> str | None:
    """Why a collector's ``config_schema`` cannot be used, or None (a missing one is fine)."""
    if schema is None:
        return None
    if not isinstance(schema, dict):
        hint = (
            " (in Python `{...}` is a set holding Ellipsis: write a real schema there)"
            if isinstance(schema, set)
            else ""
        )
        return (
            f"config_schema must be a JSON Schema object such as "
            f'{{"type": "object", "properties": {{"city": {{"type": "string"}}}}}}, got a {type(schema).__name__}{hint}'
        )
    if not _plain(schema):
        return _metaschema_problem(schema)
    # Checked once per process: the metaschema check costs ~30 ms a schema, at every start and reload.
    key = repr(schema)
    if key not in _CHECKED:
        if len(_CHECKED) >= 256:
            _CHECKED.clear()
        _CHECKED[key] = _metaschema_problem(schema)
    return _CHECKED[key]


_CHECKED: dict[str, str | None] = {}  # repr of a plain schema -> what the metaschema check said


def _plain(value: object) -> bool:
    """Built of JSON's types only (tuples too): its repr then says all of it, and may key a cache."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def _metaschema_problem(schema: JsonSchema) -> str | None:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        return f"config_schema is not a valid JSON Schema at {where}: {exc.message}"
    return None


def section_schema(collector_schema: JsonSchema | None) -> JsonSchema:
    """The schema for ``collectors.<name>``: the collector's own plus the framework keys."""
    schema: JsonSchema = copy.deepcopy(collector_schema) if collector_schema else {"type": "object"}
    if schema.get("type", "object") == "object":
        props = schema.setdefault("properties", {})
        for key, sub in FRAMEWORK_KEYS_SCHEMA.items():
            props.setdefault(key, sub)
    return schema


def schema_errors(name: str, schema: JsonSchema, section: CollectorConfig) -> list[str]:
    """Violations of a collector's section as ``collectors.<name>.path: message`` lines."""
    validator = jsonschema.Draft202012Validator(schema)
    out = []
    for error in sorted(validator.iter_errors(section), key=lambda e: [str(p) for p in e.absolute_path]):
        path = format_json_path(("collectors", name, *error.absolute_path))
        out.append(f"{path}: {error.message}")
    return out


def is_collector_folder(folder: Path) -> bool:
    return folder.is_dir() and (folder / "__init__.py").is_file() and not folder.name.startswith((".", "_"))


def import_folder(folder: Path, *, reuse: bool = False) -> ModuleType:
    """Import a collector package under a unique module name (no sys.path changes; ``reuse``: see
    ``import_plugin``)."""
    return import_plugin(folder, "assistant_collectors", reuse=reuse)


def load_collector(
    folder: Path, section: CollectorConfig | None, *, reuse: bool = False
) -> Collector | CollectorLoadError:
    """Import and register one collector folder; every failure is returned as a value. With ``reuse`` (a folder
    the framework ships) an unchanged folder's module is not imported again; it registers with ``section``
    each time."""
    name = folder.name
    section = dict(section or {})
    try:
        if not NAME_PATTERN.match(name):
            raise ValueError(f"collector folder name {name!r} must be lower-case letters, digits, '_' or '-'")
        if not (folder / "README.md").is_file():
            raise ValueError(f"collector {name!r} has no README.md in {folder}")
        module = import_folder(folder, reuse=reuse)
        spec = _registration(module, section)
        for sentence in spec.get("deprecated", []):
            log.warning("collector %s (%s): %s", name, folder, sentence)
        schema = spec.get("config_schema") or getattr(module, "CONFIG_SCHEMA", None)
        problem = schema_problem(schema)
        if problem:
            raise ValueError(problem)
        errors = schema_errors(name, section_schema(schema), section)
        if errors:
            return CollectorLoadError(
                name=name, folder=folder, error="invalid config: " + "; ".join(errors), config_schema=schema or {}
            )
        return _build(name, folder, module, spec, section, schema)
    except Exception as exc:  # noqa: BLE001 - a plugin may raise anything; isolate it
        # An import error already names the folder and the plugin's own exception.
        detail = (
            str(exc)
            if isinstance(exc, PluginImportError)
            else "".join(traceback.format_exception_only(type(exc), exc)).strip()
        )
        return CollectorLoadError(name=name, folder=folder, error=detail)


def _registration(module: ModuleType, section: CollectorConfig) -> JsonObject:
    """The collector's fields as a dict (``spec.CollectorRegistration``, not yet checked), with ``"deprecated"``:
    the deprecated forms it uses."""
    for factory_name in (REGISTER, "create_collector"):
        factory = getattr(module, factory_name, None)
        if callable(factory):
            spec = factory(section)
            if not isinstance(spec, dict):
                raise TypeError(f"{factory_name}() returned {type(spec).__name__}, expected a dict")
            deprecated = [DEPRECATED_FORMS["create_collector"]] if factory_name != REGISTER else []
            return {**spec, "deprecated": deprecated}
    run = getattr(module, "run", None)
    if not callable(run):
        raise TypeError(
            f"module has neither {REGISTER}(config) nor run(workspace, config) (assistant_framework/collectors/spec.py)"
        )
    bound, takes_config = _bind_config(run, section)
    spec = {
        "description": getattr(module, "DESCRIPTION", ""),
        "file_structure": getattr(module, "FILE_STRUCTURE", ""),
        "generated_files": getattr(module, "GENERATED_FILES", []),
        "interval_seconds": getattr(module, "INTERVAL_SECONDS", None),
        "cron": getattr(module, "CRON", None),
        "timeout_seconds": getattr(module, "TIMEOUT_SECONDS", None),
        "run": bound,
        "deprecated": [] if takes_config else [DEPRECATED_FORMS["run_without_config"]],
    }
    setup = getattr(module, "setup", None)
    if callable(setup):
        spec["setup"] = setup
    return spec


def _bind_config(run: Callable[..., Any], section: CollectorConfig) -> tuple[Callable[..., Any], bool]:
    """``run(workspace, config)`` with its config bound, True; ``run(workspace)`` as is, False (deprecated)."""
    try:
        params = [
            p
            for p in inspect.signature(run).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
    except (TypeError, ValueError):
        return run, True  # a signature Python cannot read: taken as it is, without a warning
    if len(params) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params):
        return lambda workspace: run(workspace, section), True
    return run, False


def _build(
    name: str,
    folder: Path,
    module: ModuleType,
    spec: JsonObject,
    section: CollectorConfig,
    schema: JsonSchema | None,
) -> Collector:
    run = spec.get("run")
    if not callable(run):
        raise TypeError("registration has no callable 'run'")
    # Config overrides the plugin's defaults for schedule and timeout.
    interval = section.get("interval_seconds", spec.get("interval_seconds"))
    cron = section.get("cron", spec.get("cron"))
    if section.get("interval_seconds") is not None and "cron" not in section:
        cron = None
    if section.get("cron") and "interval_seconds" not in section:
        interval = None
    if cron:
        validate_cron(cron)
    elif interval is None:
        raise ValueError("no schedule: set interval_seconds or cron")
    elif float(interval) <= 0:
        raise ValueError(f"interval_seconds must be positive, got {interval!r}")
    generated = spec.get("generated_files") or []
    if isinstance(generated, str):
        generated = [generated]
    timeout = section.get("timeout_seconds", spec.get("timeout_seconds")) or DEFAULT_TIMEOUT_SECONDS
    return Collector(
        # The folder name is canonical: it is the config key and the output folder.
        name=name,
        description=str(spec.get("description") or "").strip(),
        file_structure=str(spec.get("file_structure") or "").strip(),
        generated_files=[str(g) for g in generated],
        interval_seconds=None if cron or interval is None else float(interval),
        cron=cron or None,
        run=run,
        folder=folder,
        config=section,
        enabled=bool(section.get("enabled", False)),
        timeout_seconds=float(timeout),
        notify=list(section.get("notify") or []),
        setup=spec.get("setup") or getattr(module, "setup", None),
        deprecated=list(spec.get("deprecated", [])),
        config_schema=schema,
        module=module,
    )
