"""The configured MCP servers' tools as skills: a ``SkillSource`` for the SkillManager.

``load`` starts (or connects to) every enabled server at once, each within its timeout, and turns
each allowed tool into a ``Skill``: a name small models can write, a short description, the
grammar-safe schema, the server's (or the tool's) capabilities (default ``network``), and a ``run``
that makes the call and returns the answer as text. A server's answer is outside content unless
the owner marked the server ``trusted``: it is labelled ``[outside content]`` and its files go to
``inbox/mcp/<server>/``. What could not be offered (a server that did not start, a tool left out)
comes back as load errors, shown by ``skills list``, ``doctor`` and the bot's start-up log.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING

from assistant_framework.config.settings import McpSettings, ServerSettings
from assistant_framework.mcp.results import PartSaver, ToolError, result_text
from assistant_framework.mcp.shapes import server_says, short_description, shown_schema, skill_name
from assistant_framework.mcp.status import ServerStatus
from assistant_framework.redaction import redact_text
from assistant_framework.skills.loader import Skill
from assistant_framework.skills.source import SkillLoadError, SourceLoad
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import OUTSIDE_LABEL, OwnWordsError
from assistant_framework.workspace import Workspace

if TYPE_CHECKING:  # the mcp SDK is imported when a server is configured (INSTALL_HINT without it)
    from mcp_types import Tool

    from assistant_framework.mcp.connection import ServerConnection
    from assistant_framework.mcp.loop import LoopThread

log = logging.getLogger(__name__)

HELP_CHARS = 2000
CLOSE_SECONDS = 10.0
INSTALL_HINT = "the mcp package is not installed: run make install in the checkout (or .venv/bin/pip install -e .)"


class McpToolCall:
    """A skill's ``run``: one ``tools/call`` on the server's connection, the answer as text."""

    def __init__(self, connection: ServerConnection, server: ServerSettings, tool: str) -> None:
        self.connection = connection
        self.tool = tool
        self.outside = not server.trusted
        self.secrets = server.secrets
        # Files from an outside server are outside content too: inbox/ is where the workspace keeps it.
        self.folder = f"inbox/mcp/{server.name}" if self.outside else f"mcp/{server.name}"

    def __call__(self, workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> str:
        try:
            result = self.connection.call(self.tool, args)
            # A server that echoes what it was sent (its URL's token, a header) gives it to no one.
            text = redact_text(result_text(result, PartSaver(workspace, self.folder, self.tool)), self.secrets)
        except ToolError as exc:
            # The server's words in an error (its error content, its refusal) are outside content too.
            raise (OwnWordsError if exc.own_words else ValueError)(redact_text(str(exc), self.secrets)) from None
        return f"{OUTSIDE_LABEL} {text}" if self.outside else text


def tool_skill(server: ServerSettings, tool: Tool, connection: ServerConnection) -> Skill | SkillLoadError:
    """The skill for one listed tool, or why it cannot be one."""
    tool_name = str(getattr(tool, "name", "") or "")
    name = skill_name(server.name, tool_name)
    if name is None:
        return SkillLoadError(
            f"mcp:{server.name}", None, f"MCP server {server.name!r}: tool {tool_name[:80]!r} has no usable name"
        )
    raw_description = getattr(tool, "description", None) or getattr(tool, "title", None) or ""
    schema, cut = shown_schema(getattr(tool, "input_schema", None))
    help_text = short_description(raw_description, HELP_CHARS, "(the server gives no description)")
    help_text += f"\n\nTool {tool_name[:200]!r} of the MCP server {server.name!r} ({server.where})."
    if cut:
        help_text += f" Its input schema was cut for the prompt: {cut}."
    return Skill(
        name=name,
        description=server_says(
            server.name, short_description(raw_description, server.description_chars, f"{tool_name[:80]}")
        ),
        args_schema=schema,
        run=McpToolCall(connection, server, tool_name),
        folder=None,
        source_path=None,
        readme_path=None,
        help_text=help_text,
        schema_source=f"MCP server {server.name!r}" + (f" ({cut})" if cut else ""),
        capabilities=list(server.capabilities_of(tool_name)),
        timeout_seconds=server.timeout + 5,  # the server's own timeout answers first
        wants_context=True,
        module_name="",
        origin=f"MCP server {server.name!r} tool {tool_name[:80]!r}",
        outside=not server.trusted,
    )


def server_skills(server: ServerSettings, tools: list[Tool], connection: ServerConnection) -> SourceLoad:
    """The skills of one server's listed tools, after its allow-list; clashes within it are errors."""
    loaded = SourceLoad()
    allowed = set(server.tools) if server.tools is not None else None
    seen: dict[str, str] = {}
    for tool in tools:
        tool_name = str(getattr(tool, "name", "") or "")
        made = tool_skill(server, tool, connection)
        if allowed is not None and tool_name not in allowed and getattr(made, "name", None) not in allowed:
            continue
        if isinstance(made, SkillLoadError):
            loaded.errors.append(made)
        elif made.name in seen:
            loaded.errors.append(
                SkillLoadError(
                    made.name,
                    None,
                    f"MCP server {server.name!r}: tools {seen[made.name][:80]!r} and {tool_name[:80]!r} both become "
                    f"the skill {made.name!r}; list one in mcp.servers.{server.name}.tools",
                )
            )
        else:
            seen[made.name] = tool_name
            loaded.skills.append(made)
    if allowed is not None:
        offered = {str(getattr(t, "name", "")) for t in tools} | {s.name for s in loaded.skills} | set(seen)
        for missing in sorted(allowed - offered):
            listed = ", ".join(sorted(str(getattr(t, "name", "")) for t in tools)[:20])
            loaded.errors.append(
                SkillLoadError(
                    f"mcp:{server.name}",
                    None,
                    f"MCP server {server.name!r} has no tool {missing!r} (mcp.servers.{server.name}.tools); "
                    f"it lists: {listed}",
                )
            )
    return loaded


class McpSkills:
    """Every enabled server of the ``mcp`` section, as one skill source."""

    def __init__(self, settings: McpSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._loop: LoopThread | None = None
        self._connections: list[ServerConnection] = []
        self._offered: dict[str, tuple[str, ...]] = {}
        self._missing_sdk = False

    def load(self) -> SourceLoad:
        """Start every server at once (each within its timeout) and offer their allowed tools."""
        self.close()
        self._offered = {}
        servers = self.settings.active()
        if not servers:
            return SourceLoad()
        try:
            from assistant_framework.mcp.connection import ServerConnection
            from assistant_framework.mcp.loop import LoopThread
        except ImportError:
            self._missing_sdk = True
            return SourceLoad(errors=[SkillLoadError(f"mcp:{s.name}", None, INSTALL_HINT) for s in servers])
        with self._lock:
            self._loop = LoopThread("mcp")
            self._connections = [ServerConnection(server, self._loop) for server in servers]
            connections = list(self._connections)
        loaded = SourceLoad()
        with ThreadPoolExecutor(max_workers=len(connections), thread_name_prefix="mcp-start") as pool:
            outcomes = list(pool.map(_started, connections))
        for connection, outcome in zip(connections, outcomes, strict=True):
            server = connection.settings
            if isinstance(outcome, str):
                loaded.errors.append(
                    SkillLoadError(
                        f"mcp:{server.name}", None, f"MCP server {server.name!r} ({server.where}): {outcome}"
                    )
                )
                continue
            offered = server_skills(server, outcome, connection)
            loaded.skills += offered.skills
            loaded.errors += offered.errors
            self._offered[server.name] = tuple(skill.name for skill in offered.skills)
        return loaded

    def listings(self) -> list[tuple[ServerSettings, list[Tool]]]:
        """Each started server with the tools it listed (before the allow-list)."""
        with self._lock:
            return [(c.settings, list(c.tools)) for c in self._connections if c.answered]

    def statuses(self) -> list[ServerStatus]:
        """One status per configured server (disabled ones too), for ``doctor`` and ``skills list``."""
        with self._lock:
            by_name = {c.settings.name: c.status() for c in self._connections}
        rows = []
        for server in self.settings.servers.values():
            if server.name in by_name:
                rows.append(replace(by_name[server.name], skills=self._offered.get(server.name, ())))
            else:
                why = (
                    "disabled"
                    if not (self.settings.enabled and server.enabled)
                    else (INSTALL_HINT if self._missing_sdk else "not started")
                )
                rows.append(ServerStatus(server.name, server.transport, server.where, False, 0, why))
        return rows

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Stop every server at once, then the loop (the skills of this source stop working)."""
        with self._lock:
            connections, loop = self._connections, self._loop
            self._connections, self._loop = [], None
        if loop is None:
            return

        async def close_all() -> None:
            await asyncio.gather(*(c.aclose(timeout) for c in connections), return_exceptions=True)

        try:
            loop.call(close_all(), timeout + 5)
        except (TimeoutError, RuntimeError):
            log.warning("mcp servers did not all stop within %g s", timeout)
        loop.stop()


def _started(connection: ServerConnection) -> list[Tool] | str:
    try:
        return connection.start()
    except ToolError as exc:
        return str(exc) or "did not start"
    except Exception as exc:  # noqa: BLE001 - one server's surprise must not stop the others
        log.exception("mcp server %r failed to start", connection.settings.name)
        return redact_text(f"{type(exc).__name__}: {exc}", connection.settings.secrets)[:300]
