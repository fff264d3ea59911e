"""``assistant web``: the owner's web page on this machine (loopback unless told otherwise)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from assistant_framework.config import ConfigError
from messaging_llm_bot.cli import int_range
from messaging_llm_bot.cli.config import Subparsers, add_config_option


def register(subparsers: Subparsers) -> None:
    web = subparsers.add_parser(
        "web", help="serve the web page: memory, conversations, traces, collectors, usage, skills"
    )
    add_config_option(web)
    web.add_argument("--workspace", default="workspace", help="workspace folder (default: workspace)")
    web.add_argument("--host", default=None, help="address to listen on (default: web.host, else 127.0.0.1)")
    web.add_argument("--port", type=int_range(0, 65535), default=None, help="port (default: web.port, else 8765)")
    web.set_defaults(func=cmd_web)


def cmd_web(args: argparse.Namespace) -> int:
    from assistant_framework.web import WebServer, standalone_parts
    from assistant_framework.web.auth import TokenError
    from assistant_framework.workspace import existing_workspace
    from assistant_framework.workspace.inuse import hold_in_use
    from messaging_llm_bot.serve.control_page import control_mount
    from messaging_llm_bot.serve.mounts import served_mounts

    # Only the bot and setup create a workspace: a typo here must not serve a new, empty one.
    existing_workspace(args.workspace)
    if not Path(args.config).exists():
        raise ConfigError(f"{args.config}: config file or directory does not exist (pass --config)")
    parts = standalone_parts(args.config, args.workspace)
    in_use = hold_in_use(parts.workspace.root)  # `restore` refuses the workspace while the page serves it
    try:
        try:
            server = WebServer(
                parts,
                host=args.host,
                port=args.port,
                mounts=[
                    *served_mounts(parts.settings, parts.workspace, parts.memory, 2.0),
                    control_mount(args.config),
                ],
            )
        except TokenError as exc:
            print(f"config error: {exc}", file=sys.stderr)
            return 2
        try:
            server.serve_forever()
        except OSError as exc:
            print(f"error: cannot listen on {server.host}:{server.port}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("stopped")
    finally:
        parts.close()
        in_use.release()
    return 0
