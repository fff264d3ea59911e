"""CollectorManager: discovers, loads and describes collector plugins.

Collectors come from the built-in ``collectors/`` folder plus
``runtime.collectors_dirs`` (a later folder's collector replaces an earlier
one of the same name). Modules are imported once per load()/reload(), never
per message; a built-in one whose files are unchanged once per process (``import_plugin``'s ``reuse``).
Scheduling lives in :mod:`.runner`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

from assistant_framework.collectors.loader import (
    Collector,
    CollectorLoadError,
    is_collector_folder,
    load_collector,
    section_schema,
)
from assistant_framework.collectors.spec import SourceState
from assistant_framework.collectors.state import load_state
from assistant_framework.config.settings import RuntimeSettings
from assistant_framework.json_types import JsonObject, JsonSchema
from assistant_framework.plugin_import import LoadOnce
from assistant_framework.workspace import Workspace

#: The repository's ``collectors/`` folder (next to the package).
BUILTIN_DIR = Path(__file__).resolve().parents[2] / "collectors"

_PROMPT_INTRO = (
    "[Collectors]\n"
    "Background collectors write files into the workspace. Their files are for discovery and "
    "targeted reads (with the file skill or memory search); their content is not expanded into "
    "this prompt. Each run lists what is new in collectors/<name>/new.json and appends to "
    "collectors/<name>/runs.jsonl."
)


class CollectorStatus(TypedDict):
    """One collector's row of ``status()`` (``collectors status``, the web page, ``/now``)."""

    name: str
    enabled: bool
    schedule: str | None
    last_start: str | None
    duration_s: float | None
    outcome: str | None  # "ok" | "error" | "timeout" | "load-error"
    error: str | None
    next_run: str | None
    consecutive_failures: int
    sources: dict[str, SourceState]
    failing_sources: int


class CollectorManager:
    """Loads collector folders and answers questions about them."""

    def __init__(self, dirs: Sequence[Path], collectors_config: JsonObject, workspace: Workspace) -> None:
        self.dirs = [Path(d) for d in dirs]
        self.collectors_config = dict(collectors_config or {})
        self.workspace = workspace
        self._collectors: dict[str, Collector] = {}
        self._errors: list[CollectorLoadError] = []
        self._prompt_cache: str | None = None
        self._once = LoadOnce(self.load)

    @classmethod
    def from_settings(
        cls,
        runtime: RuntimeSettings,
        collectors: object,
        workspace: Workspace,
        builtin_dir: Path | None = None,
        *,
        defer: bool = False,
    ) -> CollectorManager:
        """A loaded manager over the built-in folder plus ``runtime.collectors_dirs``.

        ``runtime`` is the config's record (built once per load or ``/reload``), ``collectors`` its
        ``collectors`` section as loaded: each collector's own JSON, which its schema checks (not a record).
        With ``defer`` the folders are imported on first use (or by ``ensure_loaded`` from a thread).
        """
        dirs = [builtin_dir or BUILTIN_DIR] + [Path(d) for d in runtime.collectors_dirs]
        sections: JsonObject = {}
        for name, section in (collectors if isinstance(collectors, dict) else {}).items():
            # Collectors see the user's timezone unless their own section overrides it.
            sections[name] = {"timezone": runtime.timezone, **section} if isinstance(section, dict) else section
        manager = cls(dirs, sections, workspace)
        if not defer:
            manager.load()
        return manager

    @property
    def collectors(self) -> dict[str, Collector]:
        """The loaded collectors by name (loaded first if loading was deferred)."""
        self.ensure_loaded()
        return self._collectors

    @property
    def errors(self) -> list[CollectorLoadError]:
        """Collector folders that failed to load, with why."""
        self.ensure_loaded()
        return self._errors

    def ensure_loaded(self) -> None:
        """Load now unless already loaded; a caller that arrives during a load waits for it."""
        self._once.ensure()

    def load(self) -> None:
        """Import every collector folder once; failures land in ``errors``."""
        folders: dict[str, tuple[Path, bool]] = {}
        errors: list[CollectorLoadError] = []
        for base in self.dirs:
            if not base.is_dir():
                errors.append(
                    CollectorLoadError(base.name, base, f"{base}: no such folder (listed in runtime.collectors_dirs)")
                )
                continue
            # The shipped collectors' modules are kept for the process while their files are unchanged.
            shipped = base.resolve() == BUILTIN_DIR
            for folder in sorted(base.iterdir()):
                if is_collector_folder(folder):
                    folders[folder.name] = (folder, shipped)
        collectors: dict[str, Collector] = {}
        for name, (folder, shipped) in sorted(folders.items()):
            section = self.collectors_config.get(name) or {}
            if not isinstance(section, dict):
                errors.append(CollectorLoadError(name, folder, f"collectors.{name} must be an object"))
                continue
            result = load_collector(folder, section, reuse=shipped)
            if isinstance(result, CollectorLoadError):
                errors.append(result)
            else:
                collectors[name] = result
        self._collectors = collectors
        self._errors = errors
        self._prompt_cache = None
        self._once.done = True

    def reload(self, collectors_config: JsonObject | None = None) -> None:
        """Load again, optionally with a new ``collectors`` config section."""
        if collectors_config is not None:
            self.collectors_config = dict(collectors_config)
        self.load()

    def enabled(self) -> list[Collector]:
        """Collectors that are enabled in config and loaded, sorted by name."""
        return [c for _, c in sorted(self.collectors.items()) if c.enabled]

    def get(self, name: str) -> Collector:
        """A loaded collector; KeyError naming it (and its load error) otherwise."""
        if name in self.collectors:
            return self.collectors[name]
        for error in self.errors:
            if error.name == name:
                raise KeyError(f"collector {name!r} failed to load: {error.error}")
        known = ", ".join(sorted(self.collectors)) or "none"
        raise KeyError(f"no collector named {name!r} (loaded: {known})")

    def schemas(self) -> dict[str, JsonSchema]:
        """``{"collectors.<name>": schema}`` for config validation that names files."""
        schemas = {f"collectors.{c.name}": section_schema(c.config_schema) for c in self.collectors.values()}
        for error in self.errors:
            if error.config_schema is not None:
                schemas[f"collectors.{error.name}"] = section_schema(error.config_schema)
        return schemas

    def prompt_section(self) -> str:
        """The cacheable ``[Collectors]`` prompt text; "" when none is enabled."""
        if self._prompt_cache is None:
            self._prompt_cache = render_prompt_section(self.enabled())
        return self._prompt_cache

    def status(self) -> list[CollectorStatus]:
        """Per collector (loaded or failed): schedule state as stored in the workspace."""
        rows: list[CollectorStatus] = []
        for name, collector in sorted(self.collectors.items()):
            state = load_state(self.workspace, name)
            rows.append(
                {
                    "name": name,
                    "enabled": collector.enabled,
                    "schedule": schedule_text(collector),
                    "last_start": state.last_start,
                    "duration_s": state.duration_s,
                    "outcome": state.outcome,
                    "error": state.error,
                    "next_run": state.next_run if collector.enabled else None,
                    "consecutive_failures": state.consecutive_failures,
                    "sources": state.sources,
                    "failing_sources": sum(
                        1 for row in state.sources.values() if isinstance(row, dict) and not row.get("ok")
                    ),
                }
            )
        for error in self.errors:
            rows.append(
                {
                    "name": error.name,
                    "enabled": bool((self.collectors_config.get(error.name) or {}).get("enabled", False))
                    if isinstance(self.collectors_config.get(error.name), dict)
                    else False,
                    "schedule": None,
                    "last_start": None,
                    "duration_s": None,
                    "outcome": "load-error",
                    "error": error.error,
                    "next_run": None,
                    "consecutive_failures": 0,
                    "sources": {},
                    "failing_sources": 0,
                }
            )
        rows.sort(key=lambda r: str(r["name"]))
        return rows


def schedule_text(collector: Collector) -> str:
    if collector.cron:
        return f"cron {collector.cron}"
    return f"every {collector.interval_seconds:g}s"


def render_prompt_section(collectors: Sequence[Collector]) -> str:
    """Pure rendering of the ``[Collectors]`` section (sorted, no timestamps)."""
    if not collectors:
        return ""
    parts = [_PROMPT_INTRO]
    for collector in sorted(collectors, key=lambda c: c.name):
        lines = [f"- {collector.name}: {collector.description or '(no description)'}"]
        lines.append(f"  Folder: collectors/{collector.name}/")
        if collector.generated_files:
            lines.append("  Files: " + ", ".join(collector.generated_files))
        if collector.file_structure:
            lines.append("  Structure: " + " ".join(collector.file_structure.split()))
        parts.append("\n".join(lines))
    return "\n".join(parts) + "\n"
