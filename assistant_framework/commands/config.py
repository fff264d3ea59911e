"""``config show|get|set|validate``."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from ..config import (ConfigError, LoadedConfig, get_key, load_config, load_config_detailed, owner_file, parse_cli_value,
                      redact, set_key, validate_config)
from ..workspace import Workspace, atomic_write_bytes


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default="config", help="config file or directory (default: config)")


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("config", help="show, read, change and validate the config")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    show = commands.add_parser("show", help="print the whole merged config, secrets redacted")
    add_config_option(show)
    show.set_defaults(func=cmd_show)

    get = commands.add_parser("get", help="print one value, e.g. llm.runners")
    add_config_option(get)
    get.add_argument("key")
    get.set_defaults(func=cmd_get)

    set_ = commands.add_parser("set", help="write one value into the file that owns the key")
    add_config_option(set_)
    set_.add_argument("key")
    set_.add_argument("value", help="parsed as JSON when it parses, else taken as a string")
    set_.set_defaults(func=cmd_set)

    validate = commands.add_parser("validate", help="check the config against its schema")
    add_config_option(validate)
    validate.set_defaults(func=cmd_validate)


def cmd_show(args: argparse.Namespace) -> int:
    print(json.dumps(redact(load_config(args.config)), indent=2, ensure_ascii=False))
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    data = load_config(args.config)
    try:
        value = get_key(data, args.key)
    except KeyError as exc:
        print(f"error: {exc.args[0]}")
        return 1
    value = redact({args.key.split(".")[-1]: value})[args.key.split(".")[-1]]
    print(value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False))
    return 0


def cmd_set(args: argparse.Namespace) -> int:
    root = Path(args.config)
    file, _ = owner_file(root, args.key)
    before = file.read_bytes() if file.exists() else None
    set_key(root, args.key, parse_cli_value(args.value))
    try:
        errors = plugin_schema_errors(load_config_detailed(root, env=False))
        if errors:
            raise ConfigError("\n".join(errors))
    except ConfigError:
        # Refuse a value that makes the config invalid: put the file back as it was.
        if before is None:
            file.unlink()
        else:
            atomic_write_bytes(file, before)
        raise
    print(f"{args.key} set in {file}")
    if file.suffix in (".yaml", ".yml"):
        print("note: YAML files are rewritten by `config set`, so comments in it were not kept")
    return 0


def plugin_schema_errors(loaded: LoadedConfig) -> list[str]:
    """Violations of the config schemas the collectors declare for their own sections."""
    from ..collectors import CollectorManager  # imports the collector plugins: only when validating

    # Loading plugins reads no workspace; the manager only needs one for status().
    manager = CollectorManager.from_config(loaded.data, Workspace(Path(tempfile.gettempdir()) / "assistant-unused", create=False))
    return validate_config(loaded, extra_schemas=manager.schemas())


def cmd_validate(args: argparse.Namespace) -> int:
    errors = plugin_schema_errors(load_config_detailed(args.config))
    if errors:
        raise ConfigError("\n".join(errors))
    print(f"{args.config}: valid")
    return 0
