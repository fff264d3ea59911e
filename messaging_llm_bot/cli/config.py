"""``config show|get|set|validate``.

``set`` writes into the git-ignored ``local/`` layer of a config directory (or into a
single-file config, creating it), so a user's settings and secrets never change a tracked file;
the writing and its check are the framework's (``assistant_framework.settings``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TypeAlias

from assistant_framework.collectors.check import plugin_schema_errors
from assistant_framework.config import (
    ConfigError,
    LoadedConfig,
    format_json_path,
    get_key,
    load_config_detailed,
    parse_cli_value,
    parse_key,
    redact,
)
from assistant_framework.config.checks import unknown_key
from assistant_framework.config.defaults import default_of, leaves, with_defaults
from assistant_framework.config.errors import display_path
from assistant_framework.config.reloadable import RELOAD, applied_by
from assistant_framework.settings import write_setting, write_target

#: What each command group's ``register`` adds its subcommand to (argparse's class is generic only in typeshed).
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default="config", help="config file or directory (default: config)")


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser("config", help="show, read, change and validate the config")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    show = commands.add_parser(
        "show", help="every effective value (secrets redacted), defaults marked, with the file it comes from"
    )
    add_config_option(show)
    show.add_argument("--json", action="store_true", help="the effective config as JSON (defaults filled in)")
    show.set_defaults(func=cmd_show)

    get = commands.add_parser("get", help="print one effective value, e.g. llm.max_tokens or llm.runners[0].model")
    add_config_option(get)
    get.add_argument("key")
    get.add_argument("--json", action="store_true", help="print {key, value, default, file} as JSON")
    get.set_defaults(func=cmd_get)

    set_ = commands.add_parser("set", help="write one value into the git-ignored local layer (config/local/)")
    add_config_option(set_)
    set_.add_argument("key", help="e.g. telegram.allowed_user_ids or llm.runners[0].base_url")
    set_.add_argument("value", help="parsed as JSON when it parses, else taken as a string")
    set_.set_defaults(func=cmd_set)

    validate = commands.add_parser(
        "validate", help="check the config: schema, time zones, collector names, start-up checks"
    )
    add_config_option(validate)
    validate.set_defaults(func=cmd_validate)


def _mark(loaded: LoadedConfig, path: tuple[Any, ...]) -> str:
    """Where an effective value comes from: ``(default)`` or the file that sets it."""
    try:
        get_key(loaded.data, path)
    except KeyError:
        return "(default)"
    return f"({display_path(loaded.source_of(path)[0])})"


def cmd_show(args: argparse.Namespace) -> int:
    loaded = load_config_detailed(args.config)
    effective = redact(with_defaults(loaded.data))
    if args.json:
        print(json.dumps(effective, indent=2, ensure_ascii=False))
        return 0
    for path, value in leaves(effective):
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        print(f"{format_json_path(path)} = {shown}  {_mark(loaded, path)}")
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    keys = parse_key(args.key)
    loaded = load_config_detailed(args.config)
    is_default = False
    try:
        value = get_key(loaded.data, keys)
    except KeyError:
        problem = unknown_key(keys)
        if problem is not None:  # a typo: exit 2 with the known key it is closest to
            raise ConfigError(problem) from None
        try:
            value, is_default = default_of(keys), True
        except KeyError:
            # With --json, stdout stays for JSON only (a script pipes it): the sentence goes to stderr.
            print(
                f"error: config key {format_json_path(keys)!r} is not set and has no default",
                flush=True,
                file=sys.stderr if args.json else sys.stdout,
            )
            return 1
    last = next((k for k in reversed(keys) if isinstance(k, str)), "")
    value = redact({last: value})[last]
    if args.json:
        file = None if is_default else display_path(loaded.source_of(keys)[0])
        print(
            json.dumps(
                {"key": format_json_path(keys), "value": value, "default": is_default, "file": file}, ensure_ascii=False
            )
        )
        return 0
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    print(f"{text}  (default)" if is_default else text)
    return 0


def cmd_set(args: argparse.Namespace) -> int:
    root = Path(args.config)
    keys = parse_key(args.key)
    file = write_setting(root, keys, parse_cli_value(args.value))
    where = " (the git-ignored local layer)" if write_target(root) != root else ""
    print(f"{format_json_path(keys)} set in {display_path(file)}{where}")
    print(when_applied(keys))
    if file.suffix in (".yaml", ".yml"):
        print("note: YAML files are rewritten by `config set`, so comments in it were not kept")
    return 0


def when_applied(keys: tuple[Any, ...]) -> str:
    """How a running bot takes the key up: ``/reload`` or a restart (the table in config/reloadable.py)."""
    if applied_by(keys) == RELOAD:
        return "A running bot applies it when you send /reload in your chat with it (no restart)."
    return (
        "A running bot needs a restart for it (sudo systemctl restart assistant, or stop make run and start it "
        "again); /reload keeps the running value."
    )


def cmd_validate(args: argparse.Namespace) -> int:
    loaded = load_config_detailed(args.config)
    errors = plugin_schema_errors(loaded)
    if errors:
        raise ConfigError("\n".join(errors))
    print(f"{args.config}: valid")
    llm = value if isinstance(value := loaded.data.get("llm"), dict) else {}
    if not llm.get("runners") and not llm.get("base_url"):
        # Valid for the memory and web commands, but the bot has nothing to talk to.
        print("note: no llm.runners: the bot needs a model server to start (make setup writes one)")
    return 0
