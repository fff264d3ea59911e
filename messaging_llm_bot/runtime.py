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
from messaging_llm_bot.llm.structured import complete_structured, schema_from_extra

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


class BackgroundModel:
    """The model calls of background work (facts, episodes, profile), on the current client.

    ``/reload`` swaps ``llm``, so queued and later jobs go to the new runners. A json_schema
    ``response_format`` goes through the per-runner format choice (llm/structured.py), so a
    server lacking one format does not fail every extraction.
    """

    def __init__(self, llm: LLMClient) -> None:
        self.llm = llm

    def __call__(self, messages: list[dict], **kwargs: Any) -> str:
        # llm.background_extra_body, e.g. {"id_slot": 1} on llama-server with two slots (-np 2),
        # keeps background calls off the chat's slot and so off its cached prompt.
        background = self.llm.config.get("background_extra_body") or {}
        schema, name, rest = schema_from_extra({**background, **(kwargs.pop("extra", None) or {})})
        if schema is None:
            return self.llm.complete(messages, extra=rest or None, **kwargs).text
        return complete_structured(self.llm, messages, schema, name, extra=rest or None, **kwargs).text


def _memory(config: dict, workspace: Workspace, model: BackgroundModel) -> Any:
    if not (config.get("memory") or {}).get("enabled", True):
        return None
    return MemoryService(workspace, config, complete=model, embed=embedding_client(config.get("llm") or {}))


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
    background_model: BackgroundModel | None = None
    overrides: dict = field(default_factory=dict)
    _notify: Callable[[str, str], None] | None = None
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
            if self.background_model is not None:
                self.background_model.llm = llm  # background jobs follow the new runners
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
        """Start the collector runner and the memory maintenance timer."""
        self._notify = notify
        if self.collectors is not None:
            self.collector_runner = self._make_runner()
            self.collector_runner.start()
        if self.memory is not None and self._maintenance is None:
            self._stop.clear()
            self._maintenance = threading.Thread(target=self._maintenance_loop, name="memory-maintenance", daemon=True)
            self._maintenance.start()

    def _maintenance_loop(self) -> None:
        while not self._stop.wait(MEMORY_MAINTENANCE_SECONDS):
            try:
                self.memory.maintenance()
            except Exception:  # keep the timer alive; the next hour may work
                log.exception("memory maintenance failed")

    def shutdown(self, timeout: float = 20) -> None:
        """Stop background work, wait for memory jobs (up to ``timeout``), close clients."""
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
    background_model = BackgroundModel(llm)
    memory = _memory(config, workspace, background_model)
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
        background_model=background_model,
        overrides=overrides,
    )
