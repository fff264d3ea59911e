"""What the frontends use of the assembled bot: the ``Runtime`` protocol (``BotRuntime`` in
messaging_llm_bot/runtime.py has it all; a test may hand a frontend anything that has these)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from assistant_framework.config.reloadable import ReloadReport
from assistant_framework.config.settings import Settings
from assistant_framework.json_types import JsonObject

if TYPE_CHECKING:  # pragma: no cover - the parts load when the runtime builds them
    from assistant_framework.memory.service import MemoryService
    from assistant_framework.skills import SkillManager
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.agent.loop import Agent

#: ``notify(collector_name, text)``: a collector's notice for the owner.
Notify = Callable[[str, str], None]


class Runtime(Protocol):
    """The runtime's parts and calls a chat frontend uses."""

    config: JsonObject  # the loaded config (replaced by /reload)
    settings: Settings  # its records (replaced by /reload with it)
    workspace: Workspace
    config_path: Path  # the config it was loaded from (pairing writes its local layer: conversation/pairing.py)

    @property
    def agent(self) -> Agent:
        """The agent that answers messages (built on first use when start-up deferred it)."""
        ...

    @property
    def memory(self) -> MemoryService | None:
        """The owner's memory (None when it is off): a document's text is indexed in it as it arrives."""
        ...

    @property
    def skills(self) -> SkillManager:
        """The loaded skills (for /skills)."""
        ...

    def reload(self) -> ReloadReport:
        """Re-read the config and plugins; the changed keys applied and those that need a restart, or why not."""
        ...

    def status_text(self) -> str:
        """The /status text."""
        ...

    def warm_up(self) -> None:
        """Build what start-up deferred."""
        ...

    def start_background(self, notify: Notify | None = None) -> None:
        """Start collectors and memory upkeep, once; ``notify`` gets collector notices."""
        ...

    def on_shutdown(self, hook: Callable[[float], None]) -> None:
        """Run ``hook(timeout)`` first at shutdown."""
        ...

    def shutdown(self, timeout: float = 20) -> bool:
        """Stop background work and close the clients; False when memory work was left for the next start."""
        ...
