"""Changing the config from outside the running bot: ``write_setting`` puts one value into the git-ignored
``local/`` layer of a config directory (or into a single-file config), and refuses a value that makes the
config invalid, collectors' schemas included (``assistant config set``, ``assistant setup``, ``assistant mcp
add``); ``remove_setting`` takes one key out of that layer again (``assistant mcp remove``).
"""

from __future__ import annotations

import contextlib
import copy
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from assistant_framework.collectors.check import plugin_schema_errors
from assistant_framework.config import (
    LOCAL_DIR,
    ConfigError,
    format_json_path,
    get_key,
    load_config_detailed,
    owner_file,
    parse_key,
    set_in_file,
)
from assistant_framework.config.checks import unknown_key
from assistant_framework.config.errors import JsonPath, display_path
from assistant_framework.config.keys import check_key_names
from assistant_framework.config.parse import _parse_file
from assistant_framework.workspace import atomic_write_bytes
from assistant_framework.workspace.locks import flock_until

#: How long ``config set`` waits for another writer of the same config (one at a time: each writes back the
#: file as it read it).
WRITER_WAIT_SECONDS = 30.0


def write_target(root: Path) -> Path:
    """Where ``config set`` writes: the ``local/`` layer of a directory, or the single file itself."""
    if root.is_file() or (not root.exists() and root.suffix in (".json", ".yaml", ".yml")):
        return root
    return root / LOCAL_DIR


def _through_lists(root: Path, keys: JsonPath, value: object) -> tuple[tuple[str, ...], object]:
    """A key that goes through a list (``llm.runners[0].model``) becomes the whole list with one element changed:
    the key of that list (names only) and the list."""
    at = next((i for i, k in enumerate(keys) if isinstance(k, int)), None)
    if at is None:
        return cast(tuple[str, ...], keys), value  # no list index in it: names only
    prefix = cast(tuple[str, ...], keys[:at])  # the names before the first list index
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


def write_setting(root: Path, key: str | JsonPath, value: object) -> Path:
    """Write one value into the local layer of ``root`` (or the single-file config), validated.

    A value that makes the config invalid is refused (ConfigError) and the file put back as it was.
    """
    keys = parse_key(key) if isinstance(key, str) else tuple(key)
    check_key_names(keys)  # names become paths below the root: checked before anything else
    problem = unknown_key(keys)
    if problem is not None:
        raise ConfigError(f"{problem}; nothing was written")
    if root.exists() and not root.is_dir() and root.suffix not in (".json", ".yaml", ".yml"):
        raise ConfigError(f"{root}: not a config directory or .json/.yaml file")
    if not root.exists() and root.suffix not in (".json", ".yaml", ".yml"):
        # A wrong --config (or the wrong current folder) must not start a new config tree.
        raise ConfigError(f"{root}: config directory does not exist (run from the checkout, or pass --config)")
    # One `config set` at a time per config: two at once would each write back the file as read.
    with one_writer(root):
        return _write_setting_locked(root, keys, value)


@contextlib.contextmanager
def one_writer(root: Path, timeout: float = WRITER_WAIT_SECONDS) -> Iterator[None]:
    """Hold the config's writer lock: an exclusive ``flock`` on the config's folder (the folder of a single-file
    config). A folder's inode stays while files in it are replaced, so no lock file is made anywhere: none in a
    tracked folder, and none in the shared temporary folder, where another user could make it first or point it
    elsewhere. ConfigError when another writer holds it past ``timeout`` seconds."""
    folder = root if root.is_dir() else root.parent
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if not flock_until(fd, time.monotonic() + timeout, 0.05):
            raise ConfigError(
                f"{display_path(root)}: another change to this config is still being written after {timeout:g} s; "
                "nothing was changed (try again)"
            )
        yield  # closing the descriptor below releases the lock
    finally:
        os.close(fd)


def remove_setting(root: Path, key: str | tuple[str, ...]) -> list[Path]:
    """Take one key out of the local layer of ``root`` (or out of the single-file config), validated.

    A key that a tracked file sets is refused (ConfigError naming the file): that file is the owner's to edit,
    and removing only the local part would leave the tracked value in force. Returns the files changed.
    """
    keys = parse_key(key) if isinstance(key, str) else tuple(key)
    check_key_names(keys)
    with one_writer(root):
        target = write_target(root)
        holders = setting_files(root, keys)
        if not holders:
            raise ConfigError(f"{format_json_path(keys)} is not set in {display_path(root)}; nothing was changed")
        tracked = [file for file in holders if file != target and target not in file.parents]
        if tracked:
            raise ConfigError(
                f"{display_path(tracked[0])}: {format_json_path(keys)} is set in this tracked file, not in the local "
                "layer; edit that file (nothing was changed)"
            )
        sources = load_config_detailed(root, validate=False, env=False).sources
        before = {file: file.read_bytes() for file in holders}
        for file in holders:
            _remove_from_file(file, sources[file], keys)
        try:
            errors = plugin_schema_errors(load_config_detailed(root, env=False))
            if errors:
                raise ConfigError("\n".join(errors))
        except ConfigError as exc:
            for file, data in before.items():  # put every file back as it was
                atomic_write_bytes(file, data)
            raise ConfigError(f"{exc}\nnothing was changed") from None
        return holders


def setting_files(root: Path, key: str | JsonPath) -> list[Path]:
    """The files of the config at ``root`` that set ``key`` (or a part of it), in merge order (the local layer
    last)."""
    keys = parse_key(key) if isinstance(key, str) else tuple(key)
    loaded = load_config_detailed(root, validate=False, env=False)
    # Each file read again on its own: the merge folds a later layer into the earlier file's parsed value.
    return [file for file, prefix in loaded.sources.items() if _file_holds(_parse_file(file), prefix, keys)]


def _file_holds(data: object, prefix: tuple[str, ...], keys: JsonPath) -> bool:
    """Whether a file that supplies ``prefix`` sets ``keys`` (or a part of it, for a file below the key)."""
    if tuple(keys[: len(prefix)]) != prefix:
        return tuple(prefix[: len(keys)]) == keys  # the whole file lies inside the key
    try:
        get_key(data if isinstance(data, dict) else {}, keys[len(prefix) :])
    except KeyError:
        return False
    return True


def _remove_from_file(file: Path, prefix: tuple[str, ...], keys: JsonPath) -> None:
    inner = keys[len(prefix) :]
    if len(prefix) >= len(keys):
        file.unlink()  # the file holds nothing but (a part of) the key
        return
    data = _parse_file(file)
    node = get_key(data, inner[:-1]) if len(inner) > 1 else data
    del node[inner[-1]]
    set_in_file(file, (), data)


def _write_setting_locked(root: Path, keys: JsonPath, value: object) -> Path:
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
    except ConfigError as exc:
        # Refuse a value that makes the config invalid: put the file back as it was.
        if before is None:
            file.unlink()
            for folder in new_dirs:  # nearest first
                folder.rmdir()
        else:
            atomic_write_bytes(file, before)
        raise ConfigError(f"{exc}\nnothing was written") from None
    return file
