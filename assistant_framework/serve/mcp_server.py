"""The owner's memory as an MCP server (the official ``mcp`` SDK): one server per caller, so each tool knows
who calls (its writes' source, whether it may write) without reading it from the request.

Tools: ``memory_search``, ``recall``, ``notes``, ``note_read``, ``tasks``, ``facts``, ``contacts`` (reads), and
``note_add``, ``task_add``, ``fact_add`` (refused unless the caller may write). Resources: ``memory://now`` (today's
/now digest) and ``memory://profile``. Every call counts against the caller's per-minute bound.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from assistant_framework.serve.clients import PerMinute
from assistant_framework.serve.memory_tools import Caller, MemoryTools, WriteRefused

T = TypeVar("T")

SERVER_NAME = "assistant-memory"
READ_TOOLS = ("memory_search", "recall", "notes", "note_read", "tasks", "facts", "contacts")
WRITE_TOOLS = ("note_add", "task_add", "fact_add")


def memory_server(tools: MemoryTools, caller: Caller, per_minute: PerMinute) -> MCPServer:
    """An MCP server offering ``tools`` to ``caller``."""
    server: MCPServer = MCPServer(
        SERVER_NAME,
        instructions="The owner's memory: search it before asking the owner what they already told their assistant.",
    )
    run = _bounded_runner(caller, per_minute)
    _add_read_tools(server, tools, run)
    _add_write_tools(server, tools, caller, run)
    _add_resources(server, tools, run)
    return server


class _Run(Protocol):
    """Runs a tool's work in a thread, within the caller's per-minute bound; its refusals as tool errors."""

    async def __call__(self, work: Callable[[], T]) -> T: ...


def _bounded_runner(caller: Caller, per_minute: PerMinute) -> _Run:
    async def run(work: Callable[[], T]) -> T:
        if not per_minute.allow(caller.name):
            raise ToolError(
                f"too many calls: at most {per_minute.limit} a minute for {caller.name!r} (serve.per_minute)"
            )
        try:
            return await anyio.to_thread.run_sync(work)
        except (WriteRefused, ValueError, KeyError, FileNotFoundError) as exc:
            raise ToolError(str(exc).strip("'\"")) from None

    return run


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, default=str)


def _add_read_tools(server: MCPServer, tools: MemoryTools, run: _Run) -> None:
    @server.tool(structured_output=False)
    async def memory_search(query: str, limit: int = 10, source: str = "", since: str = "", until: str = "") -> str:
        """Search the owner's memory (chats, notes, facts, tasks, contacts, collected items): ranked hits, each with
        its source, file, date and whether it came from outside. source: e.g. notes, facts, conversation;
        since/until: YYYY-MM-DD."""
        return _text(await run(lambda: tools.search(query, limit, source, since, until)))

    @server.tool(structured_output=False)
    async def recall(message: str) -> str:
        """What the assistant would recall from memory before answering this message in the owner's chat."""
        return _text(await run(lambda: tools.recall(message)))

    @server.tool(structured_output=False)
    async def notes(query: str = "") -> str:
        """The owner's notes (path and title), or those containing query."""
        return _text(await run(lambda: tools.notes(query)))

    @server.tool(structured_output=False)
    async def note_read(name: str) -> str:
        """One note by path, slug or title."""
        return _text(await run(lambda: tools.note(name)))

    @server.tool(structured_output=False)
    async def tasks(status: str = "open") -> str:
        """The owner's tasks: open, done, due or all."""
        return _text(await run(lambda: tools.tasks(status)))

    @server.tool(structured_output=False)
    async def facts(subject: str = "", query: str = "") -> str:
        """Facts the owner's assistant keeps (subject, attribute, value, source, date)."""
        return _text(await run(lambda: tools.facts(subject, query)))

    @server.tool(structured_output=False)
    async def contacts(query: str = "") -> str:
        """The owner's contacts, or those matching query."""
        return _text(await run(lambda: tools.contacts(query)))


def _add_write_tools(server: MCPServer, tools: MemoryTools, caller: Caller, run: _Run) -> None:
    @server.tool(structured_output=False)
    async def note_add(title: str, body: str = "") -> str:
        """Add a note (marked as written by this client). Refused unless the client may write."""
        return _text(await run(lambda: tools.note_add(caller, title, body)))

    @server.tool(structured_output=False)
    async def task_add(title: str, due: str = "", notes: str = "") -> str:
        """Add an open task (marked as written by this client). Refused unless the client may write."""
        return _text(await run(lambda: tools.task_add(caller, title, due, notes)))

    @server.tool(structured_output=False)
    async def fact_add(subject: str, attribute: str, value: str) -> str:
        """Add a fact (marked as written by this client, never replacing the owner's own). Refused unless the
        client may write."""
        return _text(await run(lambda: tools.fact_add(caller, subject, attribute, value)))


def _add_resources(server: MCPServer, tools: MemoryTools, run: _Run) -> None:
    @server.resource("memory://now", name="now", description="today's /now digest", mime_type="text/plain")
    async def now() -> str:
        return await run(tools.now)

    @server.resource("memory://profile", name="profile", description="the owner's profile", mime_type="text/markdown")
    async def profile() -> str:
        return await run(tools.profile)
