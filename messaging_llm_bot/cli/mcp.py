"""``mcp add|list|remove|test``: MCP servers without editing JSON (docs/mcp.md).

``add`` and ``remove`` change ``mcp.servers`` in the git-ignored local layer the way ``config set`` does
(``assistant_framework.settings``: validated before it counts, the file put back when refused); ``test``
starts one server through the package's own skill source, lists its tools and stops it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from assistant_framework.config import ConfigError, load_config, redact
from assistant_framework.config.errors import display_path
from assistant_framework.hints import CLI
from assistant_framework.json_types import JsonObject
from assistant_framework.mcp import McpSettings, McpSkills, ServerSettings, mcp_settings
from assistant_framework.redaction import redact_text, url_secrets, url_without_secrets
from assistant_framework.settings import remove_setting, setting_files, write_setting, write_target
from messaging_llm_bot.cli import UsageError
from messaging_llm_bot.cli.config import Subparsers, add_config_option, when_applied
from messaging_llm_bot.cli.mcp_serve import add_serve

#: At most this many ``--header`` / ``--env`` pairs (a bound on every input).
MAX_PAIRS = 50


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser(
        "mcp", help="add, list, remove and test MCP servers (their tools become skills); serve the memory over MCP"
    )
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    add = commands.add_parser(
        "add",
        help="add a server to the local config layer: NAME -- COMMAND ARGS... (started by the assistant) "
        "or NAME --url URL (streamable HTTP)",
        usage="assistant mcp add NAME -- COMMAND [ARGS...]\n       assistant mcp add NAME --url URL [--header K=V]",
    )
    add.add_argument("name", help="the server's name: letters, digits and _, starting with a letter (max 24)")
    _add_options(add)
    # Everything after NAME: options, then -- and the command (argparse alone would take the command's own
    # options, e.g. `-m`, for ours); split by _split_rest.
    add.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    add.set_defaults(func=cmd_add)

    list_ = commands.add_parser("list", help="the configured servers: name, enabled, command or URL, file")
    add_config_option(list_)
    list_.add_argument("--json", action="store_true", help="the servers as a JSON list")
    list_.set_defaults(func=cmd_list)

    remove = commands.add_parser("remove", help="remove a server from the local config layer")
    remove.add_argument("name")
    add_config_option(remove)
    remove.set_defaults(func=cmd_remove)

    test = commands.add_parser(
        "test", help="start one server and list its tools (exit 0 it answered, 1 it did not, 2 no such server)"
    )
    test.add_argument("name")
    add_config_option(test)
    test.add_argument("--json", action="store_true", help="the outcome as one JSON object")
    test.set_defaults(func=cmd_test)

    add_serve(commands)


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="a streamable HTTP server's URL (http:// or https://)")
    parser.add_argument(
        "--header", action="append", default=[], metavar="K=V", help='an HTTP header (repeatable; "${ENV}" works)'
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="K=V", help="a variable for the started command (repeatable)"
    )
    parser.add_argument(
        "--capability",
        action="append",
        default=[],
        metavar="CAP",
        help="what its tools do, for the policy (repeatable; default network: each call is asked)",
    )
    add_config_option(parser)


def _split_rest(args: argparse.Namespace) -> list[str]:
    """Read the options that came after NAME into ``args``; return the server's command (what follows ``--``)."""
    rest = list(args.rest)
    if not rest or not rest[0].startswith("-") or rest[0] == "--":
        return rest[1:] if rest[:1] == ["--"] else rest  # argparse drops a -- right after NAME
    at = rest.index("--") if "--" in rest else len(rest)
    options = argparse.ArgumentParser(prog="assistant mcp add NAME", add_help=False)
    _add_options(options)
    given, unknown = options.parse_known_args(rest[:at])
    if unknown:
        raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (the server's command goes after --)")
    for key, value in vars(given).items():
        default = options.get_default(key)
        if value != default:
            current = getattr(args, key)
            setattr(args, key, current + value if isinstance(value, list) else value)
    return rest[at + 1 :]


def _pairs(values: list[str], option: str) -> dict[str, str]:
    """``K=V`` arguments as a mapping; a malformed one is a usage error."""
    if len(values) > MAX_PAIRS:
        raise UsageError(f"at most {MAX_PAIRS} {option} options")
    pairs: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"{option} {value!r}: expected NAME=VALUE")
        pairs[name.strip()] = text
    return pairs


def _configured(root: Path) -> dict[str, ServerSettings]:
    """The servers the config names (before ``${ENV}`` is read: nothing secret is needed to list them)."""
    if not root.exists():
        return {}
    return dict(mcp_settings(load_config(root, env=False)).servers)


def _entry(args: argparse.Namespace) -> JsonObject:
    """The ``mcp.servers`` entry the arguments describe; a contradiction is a usage error."""
    command = _split_rest(args)
    if args.url and command:
        raise UsageError("give either --url URL or -- COMMAND ARGS..., not both")
    if not args.url and not command:
        raise UsageError("give the server: -- COMMAND ARGS... (a command to start) or --url URL")
    entry: JsonObject = {}
    if args.url:
        if not args.url.startswith(("http://", "https://")):
            raise UsageError(f"--url {url_without_secrets(args.url)!r}: expected an http:// or https:// URL")
        if args.env:
            raise UsageError("--env is for a server the assistant starts; an HTTP server takes --header")
        entry["url"] = args.url
        headers = _pairs(args.header, "--header")
        if headers:
            entry["headers"] = headers
    else:
        if args.header:
            raise UsageError("--header is for an HTTP server (--url); a started command takes --env")
        entry["command"], *rest = command
        entry["args"] = rest
        env = _pairs(args.env, "--env")
        if env:
            entry["env"] = env
    if args.capability:
        entry["capabilities"] = list(dict.fromkeys(args.capability))
    return entry


def cmd_add(args: argparse.Namespace) -> int:
    entry = _entry(args)  # first: it reads the options given after NAME (--config among them)
    root = Path(args.config)
    existing = _configured(root)
    if args.name in existing:
        where = _file_of(root, args.name)
        raise UsageError(
            f"an MCP server named {args.name!r} is already configured ({where}); pick another name, or "
            f"`{CLI} mcp remove {args.name}` first"
        )
    file = write_setting(root, ("mcp", "servers", args.name), entry)
    layer = " (the git-ignored local layer)" if write_target(root) != root else ""
    print(f"MCP server {args.name!r} added in {display_path(file)}{layer}")
    if "command" in entry and shutil.which(entry["command"]) is None:
        print(
            f"note: the command {entry['command']!r} is not on this PATH; install it or give its full path",
            file=sys.stderr,
        )
    print(f"Check that it answers: {CLI} mcp test {args.name}")
    print(when_applied(("mcp", "servers", args.name)))
    return 0


def _file_of(root: Path, name: str) -> str:
    """The files that configure a server (tracked, then local), as messages show them."""
    files = setting_files(root, ("mcp", "servers", name))
    return ", ".join(display_path(file) for file in files)


def cmd_list(args: argparse.Namespace) -> int:
    root = Path(args.config)
    if not root.exists():
        raise ConfigError(f"{display_path(root)}: config file or directory does not exist")
    settings = mcp_settings(load_config(root, env=False))
    rows = [
        {
            "name": server.name,
            "enabled": settings.enabled and server.enabled,
            "transport": server.transport,
            "command": server.command or None,
            "args": list(server.args),
            "url": url_without_secrets(server.url) if server.url else None,
            "headers": redact({"headers": dict(server.headers)})["headers"],
            "env": redact({"env": dict(server.env)})["env"],
            "capabilities": list(server.capabilities),
            "trusted": server.trusted,
            "file": _file_of(root, server.name),
        }
        for server in settings.servers.values()
    ]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(f"no MCP servers configured; add one: {CLI} mcp add NAME -- COMMAND ARGS...")
        return 0
    width = max(len(row["name"]) for row in rows)
    for server, row in zip(settings.servers.values(), rows, strict=True):
        state = "enabled " if row["enabled"] else "disabled"
        print(f"{server.name:<{width}}  {state}  {server.transport:<5}  {server.where}  ({row['file']})")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    root = Path(args.config)
    existing = _configured(root)
    if args.name not in existing:
        known = ", ".join(sorted(existing)) or "none"
        raise UsageError(f"no MCP server named {args.name!r} (configured: {known})")
    files = remove_setting(root, ("mcp", "servers", args.name))
    print(f"MCP server {args.name!r} removed from {', '.join(display_path(f) for f in files)}")
    print(when_applied(("mcp", "servers", args.name)))
    return 0


def cmd_test(args: argparse.Namespace) -> int:
    root = Path(args.config)
    if not root.exists():
        raise ConfigError(f"{display_path(root)}: config file or directory does not exist")
    settings = mcp_settings(load_config(root))
    server = settings.servers.get(args.name)
    if server is None:
        known = ", ".join(sorted(settings.servers)) or "none"
        raise UsageError(f"no MCP server named {args.name!r} (configured: {known}); add one with `{CLI} mcp add`")
    disabled = not (settings.enabled and server.enabled)
    # A disabled server is tested too (that is how one checks it before turning it on): only it, on its own.
    one = McpSettings(
        enabled=True, timeout_seconds=settings.timeout_seconds, servers={server.name: replace(server, enabled=True)}
    )
    source = McpSkills(one)
    try:
        loaded = source.load()
        status = source.statuses()[0]
    finally:
        source.close()
    # What the server or the SDK says may quote the URL or a header: its secrets never reach the terminal.
    secrets = [*url_secrets(server.url), *server.headers.values(), *server.env.values()]
    tools = [{"skill": skill.name, "description": skill.description} for skill in loaded.skills]
    problems = [redact_text(error.error, secrets) for error in loaded.errors]
    error = redact_text(status.error, secrets)
    if args.json:
        print(
            json.dumps(
                {
                    "name": server.name,
                    "transport": server.transport,
                    "where": server.where,
                    "enabled": not disabled,
                    "answered": status.answered,
                    "error": error or None,
                    "tools": tools,
                    "errors": problems,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0 if status.answered and not problems else 1
    if not status.answered:
        print(f"MCP server {server.name!r} ({server.transport} {server.where}) did not answer: {error}")
        if server.url:
            print("Check that the server runs at that URL and that its headers are right (mcp list shows them).")
        else:
            print(f"Run the command by hand to see more, or change it: {CLI} mcp remove {server.name}, then mcp add")
        return 1
    note = " (disabled in the config: the bot does not start it)" if disabled else ""
    print(f"MCP server {server.name!r} answered{note}: {status.tools} tools, offered as {len(tools)} skills")
    width = max((len(tool["skill"]) for tool in tools), default=0)
    for tool in tools:
        print(f"  {tool['skill']:<{width}}  {tool['description']}".rstrip())
    for problem in problems:
        print(f"problem: {problem}")
    return 1 if problems else 0
