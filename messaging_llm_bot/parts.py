"""The parts of the bot and how each is built from the config's records: the skills, the model client (and
the background model calls on it), memory, the collectors and the agent. ``runtime.BotRuntime`` holds them and
rebuilds them on ``/reload``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assistant_framework.config import ConfigError
from assistant_framework.config.settings import Settings
from assistant_framework.json_types import JsonObject
from assistant_framework.workspace import Workspace

if TYPE_CHECKING:  # pragma: no cover - the parts are imported when they are built
    from assistant_framework.collectors import CollectorManager
    from assistant_framework.memory import MemoryService
    from assistant_framework.skills import SkillManager
    from messaging_llm_bot.agent.loop import Agent
    from messaging_llm_bot.llm.client import LLMClient
    from messaging_llm_bot.llm.wire import Message


def llm_client(settings: Settings) -> LLMClient:
    """The model client for the records; a bad runner list is a ConfigError."""
    from messaging_llm_bot.llm.client import LLMClient

    try:
        return LLMClient(settings.llm)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


class BackgroundModel:
    """The model calls of background work (facts, episodes, profile), on the current client.

    ``/reload`` swaps ``llm``, so queued and later jobs go to the new runners. A json_schema
    ``response_format`` goes through the client's per-runner format choice (llm/structured.py), so a
    server lacking one format does not fail every extraction. The calls yield model slots to
    user turns (llm/slots.py).
    """

    def __init__(self, llm: LLMClient) -> None:
        self.llm = llm

    def __call__(self, messages: list[Message], **kwargs: Any) -> str:
        from messaging_llm_bot.llm.slots import background_calls
        from messaging_llm_bot.llm.structured import schema_from_extra

        # llm.background_extra_body, e.g. {"id_slot": 1} on llama-server with two slots (-np 2),
        # keeps background calls off the chat's slot and so off its cached prompt.
        background = self.llm.settings.background_extra_body
        schema, name, rest = schema_from_extra({**background, **(kwargs.pop("extra", None) or {})})
        with background_calls():
            return self.llm.complete(messages, extra=rest or None, schema=schema, schema_name=name, **kwargs).text


def _memory(settings: Settings, workspace: Workspace, model: BackgroundModel) -> MemoryService | None:
    if not settings.memory.enabled:
        return None
    from assistant_framework.memory import MemoryService
    from messaging_llm_bot.llm.embeddings import embedding_client

    return MemoryService(workspace, settings, complete=model, embed=embedding_client(settings.llm.embeddings))


@dataclass
class BotParts:
    """The parts built from the config: skills, model client, memory, collectors and the agent."""

    skills: SkillManager
    llm: LLMClient
    agent: Agent
    collectors: CollectorManager | None
    memory: MemoryService | None
    background_model: BackgroundModel | None = None


def build_parts(
    config: JsonObject, workspace: Workspace, *, settings: Settings | None = None, defer_plugins: bool = False
) -> BotParts:
    """Build every part from a checked config (and its records, read from it when not given); plugin
    folders load later with ``defer_plugins``."""
    from assistant_framework.collectors import CollectorManager
    from assistant_framework.mcp import skill_sources
    from assistant_framework.skills import SkillManager
    from assistant_framework.spending import SpendingLedger
    from messaging_llm_bot.agent.loop import Agent

    settings = settings if settings is not None else Settings.from_config(config)
    llm = llm_client(settings)
    llm.spending = SpendingLedger(workspace, settings.runtime.timezone)  # the runners' caps (docs/sessions.md)
    skills = SkillManager.from_config(
        config, workspace, defer=defer_plugins, sources=skill_sources(settings.mcp), settings=settings
    )
    collectors = CollectorManager.from_settings(
        settings.runtime, config.get("collectors"), workspace, defer=defer_plugins
    )
    background_model = BackgroundModel(llm)
    memory = _memory(settings, workspace, background_model)
    agent = Agent(settings, workspace, skills, llm, collectors=collectors, memory=memory, background_traces=True)
    return BotParts(
        skills=skills, llm=llm, agent=agent, collectors=collectors, memory=memory, background_model=background_model
    )
