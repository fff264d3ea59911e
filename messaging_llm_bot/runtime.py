"""The running bot: one ``BotRuntime`` built from config and a workspace; ``/reload``, ``/status``, the
background jobs and shutdown. Each part (skills, model client, memory, collectors, agent) is built by
``parts.py``.

Frontends (Telegram, terminal) receive one ``BotRuntime`` and use only its parts and methods.
``build_runtime(..., defer=True)`` checks the config and opens the workspace at once but builds
the parts on first use or in ``warm_up()``: the Telegram frontend's first poll does not wait for
them (their imports, the memory index, the plugins).
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assistant_framework.access import plugin_dir_problems
from assistant_framework.config import ConfigError, load_config
from assistant_framework.config.reloadable import ReloadReport, plan_reload
from assistant_framework.config.settings import Settings
from assistant_framework.hints import CLI
from assistant_framework.json_types import JsonObject
from assistant_framework.workspace import Workspace, created_workspace
from messaging_llm_bot.parts import BackgroundModel, BotParts, build_parts, llm_client

__all__ = ["BackgroundModel", "BotParts", "BotRuntime", "build_parts", "build_runtime", "merge", "runner_secrets"]

if TYPE_CHECKING:  # pragma: no cover - the parts are imported when they are built
    from assistant_framework.collectors.runner import CollectorRunner
    from assistant_framework.spending import CapUse

log = logging.getLogger(__name__)

MEMORY_MAINTENANCE_SECONDS = 3600.0


def merge(base: JsonObject, extra: JsonObject) -> JsonObject:
    """A deep copy of ``base`` with ``extra`` merged in (nested dicts merged, other values replaced)."""
    out = copy.deepcopy(base)
    for key, value in (extra or {}).items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _part(name: str) -> property:
    """A runtime attribute kept in ``BotParts``, built on first access when the runtime was deferred."""

    def get(self: BotRuntime) -> Any:
        return getattr(self.ensure_built(), name)

    def set_(self: BotRuntime, value: Any) -> None:
        setattr(self.ensure_built(), name, value)

    return property(get, set_, doc=f"The runtime's {name} (built on first use when deferred).")


@dataclass
class BotRuntime:
    """Everything a frontend needs, built from one config and one workspace."""

    config_path: Path
    config: JsonObject
    workspace: Workspace
    #: The config's records, built once per load or ``/reload`` (``runtime.settings.llm.stream``).
    settings: Settings = field(default_factory=Settings)
    parts: BotParts | None = None
    collector_runner: CollectorRunner | None = None
    #: The collectors' wall clock (a test's, as ``job_clock`` is the jobs'; None: the real one).
    collector_clock: Callable[[], datetime] | None = None
    overrides: JsonObject = field(default_factory=dict)
    _notify: Callable[[str, str], None] | None = None
    _notifiers: list[Callable[[str, str], None]] = field(default_factory=list)
    _background_started: bool = False
    _shutdown_hooks: list[Callable[[float], None]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _maintenance: threading.Thread | None = None
    _build_lock: threading.Lock = field(default_factory=threading.Lock)

    skills = _part("skills")
    llm = _part("llm")
    agent = _part("agent")
    collectors = _part("collectors")
    memory = _part("memory")
    background_model = _part("background_model")

    def ensure_built(self) -> BotParts:
        """The parts, built now unless already built; a caller arriving during the build waits for it."""
        if self.parts is None:
            with self._build_lock:
                if self.parts is None:
                    self.parts = build_parts(self.config, self.workspace, settings=self.settings, defer_plugins=True)
        return self.parts

    def reload(self) -> ReloadReport:
        """Re-read config, skills and collectors. The keys ``/reload`` applies (config/reloadable.py) take
        effect; a changed key that needs a restart keeps its running value. On an invalid config the running
        one is kept and the report says why. MCP servers are started again."""
        skills = None
        try:
            plan = plan_reload(self.config, merge(load_config(self.config_path), self.overrides))
            config = plan.config
            settings = Settings.from_config(config)
            _refuse_plugin_dirs_in_workspace(settings, self.config_path, self.workspace.root)
            from assistant_framework.collectors import CollectorManager
            from assistant_framework.mcp import skill_sources
            from assistant_framework.skills import SkillManager

            llm = llm_client(settings) if settings.llm != self.settings.llm else None
            skills = SkillManager.from_config(
                config, self.workspace, sources=skill_sources(settings.mcp), settings=settings
            )
            collectors = CollectorManager.from_settings(settings.runtime, config.get("collectors"), self.workspace)
            self.agent.configure(settings, skills=skills, collectors=collectors, llm=llm)
        except (ConfigError, ValueError) as exc:
            if skills is not None:
                skills.close()
            log.warning("reload refused, keeping the running config: %s", exc)
            return ReloadReport(error=str(exc))
        old_llm, old_skills = self.llm, self.skills
        self.config, self.settings, self.skills, self.collectors = config, settings, skills, collectors
        old_skills.close()  # the old MCP servers stop; a call still running on one ends with one sentence
        if self.memory is not None:
            self.memory.configure(settings.memory)
        if llm is not None:
            llm.spending = old_llm.spending  # the day's and month's counts go on with the new runners
            self.llm = llm
            if self.background_model is not None:
                self.background_model.llm = llm  # background jobs follow the new runners
            old_llm.close()
        if self.collector_runner is not None:  # only set once start_background ran
            self.collector_runner.stop(timeout=5)
            self.collector_runner = self._make_runner()
            self.collector_runner.start()
        log.info(
            "reloaded: %d skills, %d collectors; applied %s; needs a restart: %s",
            len(skills.names()),
            len(collectors.enabled()),
            ", ".join(plan.applied) or "no changed key",
            ", ".join(plan.needs_restart) or "nothing",
        )
        self.log_plugin_errors()
        return ReloadReport(applied=plan.applied, needs_restart=plan.needs_restart)

    def _make_runner(self) -> CollectorRunner:
        from assistant_framework.collectors.runner import CollectorRunner

        timezone = self.settings.runtime.timezone
        # ``ask`` notify rules call the model as background work (it yields to user turns).
        return CollectorRunner(
            self.collectors,
            self.workspace,
            timezone=timezone,
            notify=self._notify,
            complete=self.ensure_built().background_model,
            indexer=self.memory,  # a run's new items are searchable when it ends
            clock=self.collector_clock,
        )

    def status_text(self) -> str:
        """For /status: model reachability, loaded skills (and load errors), collectors with their last run."""
        ok, model_line = self.llm.ping()
        lines = [("Model: OK — " if ok else "Model: PROBLEM — ") + model_line]
        names = self.skills.names()
        lines.append(f"Skills ({len(names)}): {', '.join(names) or 'none'}")
        for error in self.skills.errors:
            lines.append(f"- skill {error.name} failed to load: {error.error}")
        rows = self.collectors.status() if self.collectors is not None else []
        if not rows:
            lines.append("Collectors: none")
        else:
            lines.append("Collectors:")
            for row in rows:
                state = "enabled" if row.get("enabled") else "disabled"
                last = row.get("last_start") or "never run"
                outcome = row.get("outcome") or "-"
                line = f"- {row['name']} ({state}): last run {last}, {outcome}"
                if row.get("error"):
                    line += f" — {str(row['error'])[:160]}"
                lines.append(line)
        if self.memory is None:
            lines.append("Memory: off")
        return "\n".join(lines)

    def warm_up(self) -> None:
        """Build what start-up deferred (parts, plugins), so a first message need not wait for it."""
        self.ensure_built()
        self.skills.ensure_loaded()
        if self.collectors is not None:
            self.collectors.ensure_loaded()
        self.log_plugin_errors()

    def log_plugin_errors(self) -> None:
        """One warning per skill or collector folder that did not load; the others work (``/status`` lists them too)."""
        failed = [
            ("skill", self.skills.errors),
            ("collector", self.collectors.errors if self.collectors is not None else []),
        ]
        for kind, errors in failed:
            for error in errors:
                log.warning(
                    f"%s %s not loaded (the others work): %s; fix it, then /reload; `{CLI} %ss list` "
                    "shows every load error",
                    kind,
                    error.name,
                    error.error,
                    kind,
                )

    def start_background(self, notify: Callable[[str, str], None] | None = None) -> None:
        """Start the collector runner and the memory maintenance timer, once; every frontend's ``notify`` is kept.

        With several frontends in one process each calls this; collector notices go to all of them.
        """
        if notify is not None:
            self._notifiers.append(notify)
        if self._background_started:
            return
        self._background_started = True
        self._notify = self._notify_all
        if self.llm.spending is not None:
            self.llm.spending.capped = self._tell_capped
        if self.memory is not None:  # a facts file broken by hand: told in the chat, not only in the log
            self.memory.on_problem = lambda text: self._notify_all("memory", text)
        if self.collectors is not None:
            self.collector_runner = self._make_runner()
            self.collector_runner.start()
        if self.memory is not None and self._maintenance is None:
            self._stop.clear()
            self._maintenance = threading.Thread(target=self._maintenance_loop, name="memory-maintenance", daemon=True)
            self._maintenance.start()

    def _tell_capped(self, use: CapUse, next_runner: str | None) -> None:
        """Tell the owner, once per runner and period, that a runner reached a spending cap."""
        from assistant_framework.spending import capped_text

        self._notify_all("spending", capped_text(use, next_runner))

    def _notify_all(self, collector_name: str, text: str) -> None:
        for notify in list(self._notifiers):
            try:
                notify(collector_name, text)
            except Exception:  # noqa: BLE001 - one frontend's failure must not silence the others
                log.exception("collector notice through %r failed", notify)

    def on_shutdown(self, hook: Callable[[float], None]) -> None:
        """Run ``hook(timeout)`` first in ``shutdown`` (a frontend in another thread stops before the parts it uses)."""
        self._shutdown_hooks.append(hook)

    def _maintenance_loop(self) -> None:
        while not self._stop.wait(MEMORY_MAINTENANCE_SECONDS):
            try:
                self.memory.maintenance()
            except Exception:  # keep the timer alive; the next hour may work
                log.exception("memory maintenance failed")

    def shutdown(self, timeout: float = 20) -> bool:
        """Stop background work, wait for memory jobs (up to ``timeout``), close clients.

        False when memory work was still under way: its exchanges stay in the extraction journal
        (memory/journal.py) and are extracted at the next start, so a short ``timeout`` loses nothing."""
        hooks, self._shutdown_hooks = self._shutdown_hooks, []
        for hook in hooks:
            try:
                hook(timeout)
            except Exception:  # noqa: BLE001 - shutting down: go on with the rest
                log.exception("shutdown hook %r failed", hook)
        self._stop.set()
        if self.parts is None:
            with self._build_lock:  # a build under way finishes first, then is shut down below
                if self.parts is None:
                    return True
        if self.collector_runner is not None:
            self.collector_runner.stop(timeout=min(timeout, 10))
        finished = True
        if self.memory is not None:
            finished = self.memory.drain(timeout)
            if not finished:
                log.warning("memory work did not finish within %.0f s; the rest resumes at the next start", timeout)
            self.memory.close(wait=min(timeout, 5) if finished else 0)
        if not self.agent.drain(min(timeout, 10)):  # traces are written by a background thread
            log.warning("trace writes did not finish within %.0f s", min(timeout, 10))
        self.skills.close()  # MCP servers stop with the bot
        self.llm.close()
        return finished


def _refuse_plugin_dirs_in_workspace(settings: Settings, path: Path, workspace_root: Path) -> None:
    """A model that can write files must never write code the bot imports later."""
    problems = plugin_dir_problems(settings.runtime, workspace_root)
    if problems:
        where = path / "runtime.json" if path.is_dir() else path
        raise ConfigError("\n".join(f"{where}: {problem}" for problem in problems))


def build_runtime(
    config_path: str | Path, workspace_path: str | Path, *, overrides: JsonObject | None = None, defer: bool = False
) -> BotRuntime:
    """Load and check the config, open the workspace and assemble the parts; ConfigError names file and key.

    With ``defer`` the parts are built on first use or by ``warm_up()``, and their plugin folders
    load then too; config errors still come at once.
    """
    path = Path(config_path)
    overrides = overrides or {}
    config = merge(load_config(path), overrides)
    try:
        settings = Settings.from_config(config)
    except ConfigError as exc:  # an override no record takes (the files were checked by load_config)
        raise ConfigError(f"{path}: {exc}") from None
    zone_name = settings.runtime.timezone
    try:
        ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"{path}: runtime.timezone: unknown IANA time zone {zone_name!r}") from None
    _refuse_plugin_dirs_in_workspace(settings, path, Path(workspace_path))
    workspace = created_workspace(workspace_path)
    # A bad runner (no model, say) is a config error now, not at the first message.
    from messaging_llm_bot.llm.runners import runners_from_config

    try:
        runners_from_config(settings.llm)
    except ValueError as exc:
        where = path / "llm.json" if path.is_dir() else path
        raise ConfigError(f"{where}: {exc}") from None
    runtime = BotRuntime(config_path=path, config=config, settings=settings, workspace=workspace, overrides=overrides)
    if not defer:
        parts = runtime.ensure_built()
        parts.skills.ensure_loaded()
        if parts.collectors is not None:
            parts.collectors.ensure_loaded()
    return runtime


def runner_secrets(config: JsonObject) -> list[str]:
    """The API keys the model runners use (also those read from the environment), for log redaction."""
    llm = config.get("llm") or {}
    entries = llm.get("runners") or [llm]
    keys = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            key = entry.get("api_key") or (
                os.environ.get(str(entry["api_key_env"]), "") if entry.get("api_key_env") else ""
            )
            if key:
                keys.append(str(key))
    return keys
