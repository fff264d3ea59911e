"""``config show|get|set|validate``.

``set`` writes into the git-ignored ``local/`` layer of a config directory (or into a
single-file config, creating it), so a user's settings and secrets never change a tracked file.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..config import (
    LOCAL_DIR,
    ConfigError,
    LoadedConfig,
    format_json_path,
    get_key,
    load_config_detailed,
    owner_file,
    parse_cli_value,
    parse_key,
    redact,
    set_in_file,
    validate_config,
)
from ..config.checks import did_you_mean
from ..config.defaults import default_of, leaves, with_defaults
from ..workspace import Workspace, atomic_write_bytes


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default="config", help="config file or directory (default: config)")


def register(subparsers: argparse._SubParsersAction) -> None:
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


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _mark(loaded: LoadedConfig, path: tuple) -> str:
    """Where an effective value comes from: ``(default)`` or the file that sets it."""
    try:
        get_key(loaded.data, path)
    except KeyError:
        return "(default)"
    return f"({_display(loaded.source_of(path)[0])})"


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
        file = None if is_default else _display(loaded.source_of(keys)[0])
        print(
            json.dumps(
                {"key": format_json_path(keys), "value": value, "default": is_default, "file": file}, ensure_ascii=False
            )
        )
        return 0
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    print(f"{text}  (default)" if is_default else text)
    return 0


def write_target(root: Path) -> Path:
    """Where ``config set`` writes: the ``local/`` layer of a directory, or the single file itself."""
    if root.is_file() or (not root.exists() and root.suffix in (".json", ".yaml", ".yml")):
        return root
    return root / LOCAL_DIR


def _through_lists(root: Path, keys: tuple, value: Any) -> tuple[tuple, Any]:
    """A key that goes through a list (``llm.runners[0].model``) becomes the whole list with one element changed."""
    at = next((i for i, k in enumerate(keys) if isinstance(k, int)), None)
    if at is None:
        return keys, value
    prefix = keys[:at]
    try:
        current = (
            copy.deepcopy(get_key(load_config_detailed(root, validate=False, env=False).data, prefix))
            if root.exists()
            else None
        )
    except KeyError:
        current = None
    if not isinstance(current, list):
        raise ConfigError(
            f"config key {format_json_path(prefix)!r} is not a list, so {format_json_path(keys)!r} cannot be set"
        )
    node: Any = current
    for depth, key in enumerate(keys[at:-1], start=at):
        if isinstance(key, int):
            if key >= len(node):
                raise ConfigError(f"{format_json_path(keys[: depth + 1])}: the list has {len(node)} item(s)")
            node = node[key]
        else:
            node = node.setdefault(key, {})
        if not isinstance(node, (dict, list)):
            raise ConfigError(
                f"{format_json_path(keys[: depth + 1])}: is a {type(node).__name__}, cannot set inside it"
            )
    last = keys[-1]
    if isinstance(last, int):
        if last > len(node):
            raise ConfigError(f"{format_json_path(keys)}: the list has {len(node)} item(s)")
        node[last : last + 1] = [value]
    else:
        node[last] = value
    return prefix, current


def write_setting(root: Path, key: str | tuple, value: Any) -> Path:
    """Write one value into the local layer of ``root`` (or the single-file config), validated.

    A value that makes the config invalid is refused (ConfigError) and the file put back as it was.
    """
    keys = parse_key(key) if isinstance(key, str) else tuple(key)
    if root.exists() and not root.is_dir() and root.suffix not in (".json", ".yaml", ".yml"):
        raise ConfigError(f"{root}: not a config directory or .json/.yaml file")
    if not root.exists() and root.suffix not in (".json", ".yaml", ".yml"):
        # A wrong --config (or the wrong current folder) must not start a new config tree.
        raise ConfigError(f"{root}: config directory does not exist (run from the checkout, or pass --config)")
    # One `config set` at a time per config: two at once would each write back the file as read.
    with FileLock(_set_lock_path(root), timeout=30):
        return _write_setting_locked(root, keys, value)


def _set_lock_path(root: Path) -> str:
    """A lock file outside the config (no stray file in a tracked folder), one per config root."""
    digest = hashlib.sha1(str(root.resolve()).encode("utf-8")).hexdigest()[:16]
    return str(Path(tempfile.gettempdir()) / f"assistant-config-set-{digest}.lock")


def _write_setting_locked(root: Path, keys: tuple, value: Any) -> Path:
    target = write_target(root)
    keys, value = _through_lists(root, keys, value)
    file, inner = owner_file(target, keys)
    if not file.exists() and target != root and root.is_dir():
        # Mirror the tracked layout: collectors.rss.enabled -> local/collectors/rss.json.
        base_file, inner = owner_file(root, keys)
        file = target / base_file.relative_to(root)
    before = file.read_bytes() if file.exists() else None
    new_dirs = [p for p in file.parents if not p.exists()]
    set_in_file(file, inner, value, keys)
    if before is None and target != root:
        os.chmod(file, 0o600)  # the local layer holds tokens and keys
    try:
        errors = plugin_schema_errors(load_config_detailed(root, env=False))
        if errors:
            raise ConfigError("\n".join(errors))
    except ConfigError:
        # Refuse a value that makes the config invalid: put the file back as it was.
        if before is None:
            file.unlink()
            for folder in new_dirs:  # nearest first
                folder.rmdir()
        else:
            atomic_write_bytes(file, before)
        raise
    return file


def cmd_set(args: argparse.Namespace) -> int:
    root = Path(args.config)
    keys = parse_key(args.key)
    file = write_setting(root, keys, parse_cli_value(args.value))
    where = " (the git-ignored local layer)" if write_target(root) != root else ""
    print(f"{format_json_path(keys)} set in {_display(file)}{where}")
    if file.suffix in (".yaml", ".yml"):
        print("note: YAML files are rewritten by `config set`, so comments in it were not kept")
    return 0


def plugin_schema_errors(loaded: LoadedConfig) -> list[str]:
    """Unknown collector names and violations of the schemas the collectors declare for their sections."""
    from ..collectors import CollectorManager  # imports the collector plugins: only when validating

    # Loading plugins reads no workspace; the manager only needs one for status().
    manager = CollectorManager.from_config(
        loaded.data, Workspace(Path(tempfile.gettempdir()) / "assistant-unused", create=False)
    )
    errors = validate_config(loaded, extra_schemas=manager.schemas())
    known = set(manager.collectors) | {error.name for error in manager.errors}
    section = loaded.data.get("collectors")
    for name in section if isinstance(section, dict) else {}:
        if name not in known:
            file, rel = loaded.source_of(("collectors", name))
            errors.append(
                f"{_display(file)}: {format_json_path(rel)}: unknown collector {name!r}{did_you_mean(name, known)}"
            )
    return errors


def cmd_validate(args: argparse.Namespace) -> int:
    loaded = load_config_detailed(args.config)
    errors = plugin_schema_errors(loaded)
    if errors:
        raise ConfigError("\n".join(errors))
    print(f"{args.config}: valid")
    llm = loaded.data.get("llm") if isinstance(loaded.data.get("llm"), dict) else {}
    if not llm.get("runners") and not llm.get("base_url"):
        # Valid for the memory and web commands, but the bot has nothing to talk to.
        print("note: no llm.runners: the bot needs a model server to start (make setup writes one)")
    return 0
