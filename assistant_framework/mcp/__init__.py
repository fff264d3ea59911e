"""MCP (Model Context Protocol) servers' tools as skills, through the official ``mcp`` SDK.

- ``config/settings/mcp.py``: the ``mcp`` config section as typed records (``McpSettings``).
- ``source``: ``McpSkills``, the skill source the SkillManager loads the tools from.
- ``connection``: one server: start, list, call, watch, restart with backoff, stop (imports the SDK).
- ``loop``: the asyncio loop thread the connections live on.
- ``shapes``: what the model sees of a tool (name, description, schema), bounded.
- ``results``: a tool's answer as text; images and resources saved to the workspace.
- ``status``: what ``doctor`` and ``skills list`` say of a server.

Importing this package does not import the SDK (a base dependency, but heavy to import): only a configured
server does.
"""

from collections.abc import Mapping

from assistant_framework.config.settings import McpSettings, ServerSettings
from assistant_framework.config.settings.fields import read_record
from assistant_framework.mcp.source import McpSkills
from assistant_framework.mcp.status import ServerStatus


def mcp_settings(config: Mapping[str, object]) -> McpSettings:
    """The ``mcp`` record of a loaded config (``Settings.from_config(config).mcp`` without the other sections)."""
    return read_record(McpSettings, config.get("mcp"), where="mcp")


def skill_sources(settings: McpSettings) -> list[McpSkills]:
    """The skill sources of the ``mcp`` section: one when it enables any server."""
    return [McpSkills(settings)] if settings.active() else []


__all__ = ["McpSettings", "McpSkills", "ServerSettings", "ServerStatus", "mcp_settings", "skill_sources"]
