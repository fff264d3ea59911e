"""``assistant mcp serve``: the owner's memory as an MCP server over stdio, for the owner's own MCP client
(Claude Desktop, Cursor, ...: it starts this command). Read-only unless ``--write``; what it writes is marked
``mcp:local``. Stdout is the protocol: everything else goes to stderr (docs/serve.md)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from assistant_framework.config import ConfigError, load_config
from messaging_llm_bot.cli.config import add_config_option

#: The caller's name for the stdio server: the owner's own client on this machine.
LOCAL = "local"


def add_serve(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    serve = commands.add_parser(
        "serve",
        help="serve the owner's memory to an MCP client over stdio (read-only unless --write; docs/serve.md)",
    )
    add_config_option(serve)
    serve.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")
    serve.add_argument("--write", action="store_true", help="allow note_add, task_add and fact_add (marked mcp:local)")
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from assistant_framework.config.settings import Settings
    from assistant_framework.memory import MemoryService
    from assistant_framework.serve.clients import PerMinute
    from assistant_framework.serve.mcp_server import memory_server
    from assistant_framework.serve.memory_tools import Caller
    from assistant_framework.workspace import Workspace, existing_workspace
    from messaging_llm_bot.serve.memory import memory_tools

    existing_workspace(args.workspace)
    if not Path(args.config).exists():
        raise ConfigError(f"{args.config}: config file or directory does not exist (pass --config)")
    settings = Settings.from_config(load_config(args.config))
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout carries the protocol
    workspace = Workspace(args.workspace, create=False)
    memory = MemoryService(workspace, settings, start_worker=False) if settings.memory.enabled else None
    # The bot indexes its turns in its own process: here a search reads the files changed since, at most
    # every 2 seconds (a 10k-file workspace's walk is a few tens of milliseconds).
    tools = memory_tools(settings, workspace, memory, refresh_seconds=2.0)
    server = memory_server(tools, Caller(LOCAL, bool(args.write)), PerMinute(settings.serve.per_minute))
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        if memory is not None:
            memory.close()
    return 0
