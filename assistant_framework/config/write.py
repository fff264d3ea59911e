"""Writing one value (``assistant config set``, ``assistant setup``): find the file that owns the key,
then change it atomically, keeping the file's style."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from assistant_framework.config.errors import ConfigError, JsonPath, _display, format_json_path
from assistant_framework.config.keys import check_key_names
from assistant_framework.config.parse import CONFIG_SUFFIXES, _parse_file
from assistant_framework.config.tree import INDEX_STEM
from assistant_framework.workspace import atomic_write_bytes


def owner_file(config_root: Path, dotted: str | tuple[str, ...]) -> tuple[Path, tuple[str, ...]]:
    """The file of a config tree that owns a key, and the key path inside that file.

    A missing ``config_root`` ending in ``.json``/``.yaml`` is a single-file config (to be created).
    Every name of the key is checked first (``check_key_names``): names become paths below the root.
    """
    keys = tuple(dotted.split(".")) if isinstance(dotted, str) else tuple(dotted)
    check_key_names(keys, dotted)
    if config_root.is_file() or (not config_root.exists() and config_root.suffix in CONFIG_SUFFIXES):
        return config_root, keys
    # The deepest existing file wins: collectors/rss.json owns collectors.rss.enabled.
    for depth in range(len(keys), 0, -1):
        base = config_root.joinpath(*keys[:depth])
        for suffix in CONFIG_SUFFIXES:
            if base.with_name(base.name + suffix).is_file():
                return base.with_name(base.name + suffix), keys[depth:]
        for suffix in CONFIG_SUFFIXES:
            index = base / (INDEX_STEM + suffix)
            if index.is_file():
                return index, keys[depth:]
    # The root index file owns a section it already holds (e.g. index.json with "runtime").
    for suffix in CONFIG_SUFFIXES:
        index = config_root / (INDEX_STEM + suffix)
        if index.is_file():
            held = _parse_file(index)
            if isinstance(held, dict) and keys[0] in held:
                return index, keys
    # No file yet: descend existing folders, then name a new file after the next key.
    folder = config_root
    depth = 0
    while depth < len(keys) - 1 and (folder / keys[depth]).is_dir():
        folder = folder / keys[depth]
        depth += 1
    if depth == len(keys) - 1 and depth == 0:
        # A top-level scalar lives in the root index file.
        return config_root / "index.json", keys
    return folder / f"{keys[depth]}.json", keys[depth + 1 :]


def set_key(config_root: str | os.PathLike[str], dotted: str | tuple[str, ...], value: Any) -> Path:
    """Write one value into the file that owns the key, atomically, keeping the file's style.

    JSON keeps its indentation and key order; a YAML file is rewritten without its comments.
    """
    file, inner = owner_file(Path(config_root), dotted)
    return set_in_file(file, inner, value, dotted)


def set_in_file(file: Path, inner: JsonPath, value: Any, dotted: str | JsonPath = "") -> Path:
    """Write ``value`` at the key path ``inner`` of one config file (created when missing), atomically."""
    data: Any = _parse_file(file) if file.exists() else {}
    if not inner:
        data = value
    else:
        if not isinstance(data, dict):
            raise ConfigError(f"{_display(file)}: (top level): expected an object to set {dotted!r} in")
        node = data
        for depth, key in enumerate(inner[:-1]):
            child = node.get(key)
            if child is None:
                child = node[key] = {}
            if not isinstance(child, dict):
                raise ConfigError(
                    f"{_display(file)}: {format_json_path(inner[: depth + 1])}: is a {type(child).__name__}, cannot "
                    f"set {dotted!r} inside it"
                )
            node = child
        node[inner[-1]] = value
    original = file.read_text(encoding="utf-8") if file.exists() else ""
    atomic_write_bytes(file, _dump_like(file, data, original).encode("utf-8"))
    return file


def _dump_like(file: Path, data: Any, original: str) -> str:
    if file.suffix in (".yaml", ".yml"):
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    indent: int | None = 2
    match = re.search(r"\n( +)\S", original)
    if match:
        indent = len(match.group(1))
    elif original.strip() and "\n" not in original.strip():
        indent = None
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    return text + ("\n" if original.endswith("\n") or not original else "")
