"""Assembling the bot from config: workspace, skills, collectors, memory, LLM client and agent.

Frontends (Telegram, terminal) receive one ``BotRuntime`` and use only its parts and methods.
"""

from __future__ import annotations

import copy
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assistant_framework.collectors.runner import CollectorRunner
from assistant_framework.collectors import CollectorManager
from assistant_framework.config import ConfigError, load_config
from assistant_framework.memory import MemoryService
from assistant_framework.skills import SkillManager
from assistant_framework.workspace import Workspace

from messaging_llm_bot.agent.loop import Agent
from messaging_llm_bot.llm.embeddings import embedding_client
from messaging_llm_bot.llm.client import LLMClient

log = logging.getLogger(__name__)

MEMORY_MAINTENANCE_SECONDS = 3600.0


def merge(base: dict, extra: dict) -> dict:
    """A deep copy of ``base`` with ``extra`` merged in (nested dicts merged, other values replaced)."""
    out = copy.deepcopy(base)
    for key, value in (extra or {}).items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _llm_client(config: dict) -> LLMClient:
    try:
        return LLMClient(config.get("llm") or {})
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _memory(config: dict, workspace: Workspace, llm: LLMClient) -> Any:
    if not (config.get("memory") or {}).get("enabled", True):
        return None

    def complete(messages: list[dict], **kwargs: Any) -> str:
        return llm.complete(messages, **kwargs).text

    return MemoryService(workspace, config, complete=complete, embed=embedding_client(config.get("llm") or {}))


@dataclass
class BotRuntime:
    """Everything a frontend needs, built from one config and one workspace."""

    config_path: Path
    config: dict
    workspace: Workspace
    skills: SkillManager
    llm: LLMClient
    agent: Agent
    collectors: CollectorManager | None
    collector_runner: CollectorRunner | None
    memory: Any
    overrides: dict = field(default_factory=dict)
    _notify: Callable[[str, str], None] | None = None
    _notifiers: list[Callable[[str, str], None]] = field(default_factory=list)
    _background_started: bool = False
    _shutdown_hooks: list[Callable[[float], None]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _maintenance: threading.Thread | None = None

    def reload(self) -> str | None:
        """Re-read config, skills and collectors; on an invalid config keep the running one and return why."""
        try:
            config = merge(load_config(self.config_path), self.overrides)
            llm = _llm_client(config) if config.get("llm") != self.config.get("llm") else None
            skills = SkillManager.from_config(config, self.workspace)
            collectors = CollectorManager.from_config(config, self.workspace)
            self.agent.configure(config, skills=skills, collectors=collectors, llm=llm)
        except (ConfigError, ValueError) as exc:
            log.warning("reload refused, keeping the running config: %s", exc)
            return str(exc)
        old_llm = self.llm
        self.config, self.skills, self.collectors = config, skills, collectors
        if llm is not None:
            self.llm = llm
            old_llm.close()
        if self.collector_runner is not None:  # only set once start_background ran
            self.collector_runner.stop(timeout=5)
            self.collector_runner = self._make_runner()
            self.collector_runner.start()
        log.info("reloaded: %d skills, %d collectors", len(skills.names()), len(collectors.enabled()))
        return None

    def _make_runner(self) -> CollectorRunner:
        timezone = (self.config.get("runtime") or {}).get("timezone") or "UTC"
        return CollectorRunner(self.collectors, self.workspace, timezone=timezone, notify=self._notify)

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
        if self.collectors is not None:
            self.collector_runner = self._make_runner()
            self.collector_runner.start()
        if self.memory is not None and self._maintenance is None:
            self._stop.clear()
            self._maintenance = threading.Thread(target=self._maintenance_loop, name="memory-maintenance", daemon=True)
            self._maintenance.start()

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

    def shutdown(self, timeout: float = 20) -> None:
        """Stop background work, wait for memory jobs (up to ``timeout``), close clients."""
        hooks, self._shutdown_hooks = self._shutdown_hooks, []
        for hook in hooks:
            try:
                hook(timeout)
            except Exception:  # noqa: BLE001 - shutting down: go on with the rest
                log.exception("shutdown hook %r failed", hook)
        self._stop.set()
        if self.collector_runner is not None:
            self.collector_runner.stop(timeout=min(timeout, 10))
        if self.memory is not None:
            if not self.memory.drain(timeout):
                log.warning("memory work did not finish within %.0f s", timeout)
            self.memory.close()
        if not self.agent.drain(min(timeout, 10)):  # traces are written by a background thread
            log.warning("trace writes did not finish within %.0f s", min(timeout, 10))
        self.llm.close()


def build_runtime(config_path: str | Path, workspace_path: str | Path, *, overrides: dict | None = None) -> BotRuntime:
    """Load the config and assemble every part; raises ConfigError naming the file and key."""
    path = Path(config_path)
    overrides = overrides or {}
    config = merge(load_config(path), overrides)
    zone_name = (config.get("runtime") or {}).get("timezone") or "UTC"
    try:
        ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"{path}: runtime.timezone: unknown IANA time zone {zone_name!r}") from None
    workspace = Workspace(workspace_path)
    llm = _llm_client(config)
    skills = SkillManager.from_config(config, workspace)
    collectors = CollectorManager.from_config(config, workspace)
    memory = _memory(config, workspace, llm)
    agent = Agent(config, workspace, skills, llm, collectors=collectors, memory=memory, background_traces=True)
    return BotRuntime(
        config_path=path,
        config=config,
        workspace=workspace,
        skills=skills,
        llm=llm,
        agent=agent,
        collectors=collectors,
        collector_runner=None,
        memory=memory,
        overrides=overrides,
    )
