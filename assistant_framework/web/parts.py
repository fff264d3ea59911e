"""What the web page reads and drives: the same parts the bot runs on.

Inside the bot the page gets the ``BotRuntime`` itself (it has these attributes, and a
``/reload`` swaps them in place, so the page always sees the current ones); ``assistant web``
alone builds them here from the config and workspace, without any model client.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from assistant_framework.json_types import JsonObject

from ..collectors import CollectorManager, CollectorRunner
from ..config import load_config
from ..config.settings import Settings
from ..mcp import skill_sources
from ..skills import SkillManager
from ..workspace import Workspace
from ..workspace.private import make_workspace_private


class Parts(Protocol):
    """The attributes the page uses (``BotRuntime`` has them all)."""

    config: JsonObject
    #: The config's records (``settings.runtime.timezone``), rebuilt with it on ``/reload``.
    settings: Settings
    workspace: Workspace
    skills: SkillManager
    collectors: CollectorManager | None
    collector_runner: CollectorRunner | None
    memory: Any


@dataclass
class StandaloneParts:
    """The parts of ``assistant web`` run on its own (no model: fact extraction stays with the bot)."""

    config: JsonObject
    settings: Settings
    workspace: Workspace
    skills: SkillManager
    collectors: CollectorManager | None
    collector_runner: CollectorRunner | None
    memory: Any

    def close(self) -> None:
        self.skills.close()  # the MCP servers it started for the Skills page
        if self.memory is not None:
            self.memory.close()


def standalone_parts(config_path: str | Path, workspace_path: str | Path) -> StandaloneParts:
    """Load the config (ConfigError names file and key) and build skills, collectors and memory."""
    path = Path(config_path)
    config = load_config(path) if path.exists() else {}
    workspace = Workspace(workspace_path)
    make_workspace_private(workspace.root)  # as the bot does at start: the page may be what runs alone
    settings = Settings.from_config(config)
    # The MCP servers' tools are skills too: their servers start when the Skills page is first asked for.
    skills = SkillManager.from_config(
        config, workspace, defer=True, sources=skill_sources(settings.mcp), settings=settings
    )
    collectors = CollectorManager.from_settings(settings.runtime, config.get("collectors"), workspace)
    memory = None
    if settings.memory.enabled:
        from ..memory import MemoryService

        memory = MemoryService(workspace, settings, start_worker=False)
    return StandaloneParts(config, settings, workspace, skills, collectors, None, memory)


def collector_runner(parts: Parts) -> CollectorRunner | None:
    """The running scheduler when there is one (so a run never overlaps its scheduled run), else a new runner."""
    if parts.collector_runner is not None:
        return parts.collector_runner
    if parts.collectors is None:
        return None
    runner = CollectorRunner(
        parts.collectors, parts.workspace, timezone=parts.settings.runtime.timezone, indexer=parts.memory
    )
    if isinstance(parts, StandaloneParts):
        parts.collector_runner = runner  # one runner: its busy-slots keep two clicks from running it twice
    return runner
