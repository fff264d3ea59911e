"""What ``doctor`` and ``skills list`` say of one configured MCP server."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerStatus:
    """One server: whether it answered, its tool count, its last error and restarts."""

    name: str
    transport: str
    where: str
    answered: bool
    tools: int
    error: str = ""
    restarts: int = 0
    #: The skill names its tools are offered as (after the allow-list).
    skills: tuple[str, ...] = ()
