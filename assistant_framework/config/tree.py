"""A config directory: every file maps to a key by its path, merged into one dict.

``llm.json`` -> ``llm``, ``collectors/rss.json`` -> ``collectors.rss``; an ``index.json``
supplies its folder's own key. The git-ignored ``local/`` layer has the same layout and is
merged over the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assistant_framework.config.errors import ConfigData, ConfigError, _display
from assistant_framework.config.parse import CONFIG_SUFFIXES

INDEX_STEM = "index"
#: The git-ignored layer of a config directory, merged over the tracked files.
LOCAL_DIR = "local"


def _config_files(root: Path, *, skip_local: bool = True) -> list[tuple[Path, tuple[str, ...]]]:
    """Every config file below ``root`` with the key prefix it supplies (index files first)."""
    found: list[tuple[Path, tuple[str, ...]]] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or path.suffix not in CONFIG_SUFFIXES:
            continue
        if skip_local and rel.parts[0] == LOCAL_DIR:
            continue
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue
        keys = tuple(rel.parent.parts)
        if path.stem != INDEX_STEM:
            keys += (path.stem,)
        found.append((path, keys))
    # Shorter prefixes first so a deeper file wins over its parent's index.
    found.sort(key=lambda item: (len(item[1]), item[0].stem != INDEX_STEM, str(item[0])))
    # Two files of one layer for one key (llm.json beside llm.yaml) would merge in name order, and
    # `config set` would write to one while the other wins.
    owners: dict[tuple[str, ...], Path] = {}
    for path, keys in found:
        if keys in owners:
            where = ".".join(keys) or "the top level"
            raise ConfigError(f"{_display(owners[keys])} and {_display(path)} both supply {where}; keep one of them")
        owners[keys] = path
    return found


def _set_path(target: ConfigData, keys: tuple[str, ...], value: Any, file: Path) -> None:
    node = target
    for depth, key in enumerate(keys[:-1]):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(
                f"{_display(file)}: key {'.'.join(keys[: depth + 1])} is already a {type(child).__name__} elsewhere"
            )
        node = child
    if not keys:
        if not isinstance(value, dict):
            raise ConfigError(f"{_display(file)}: (top level): expected an object, got {type(value).__name__}")
        _deep_merge(target, value)
        return
    existing = node.get(keys[-1])
    if isinstance(existing, dict) and isinstance(value, dict):
        _deep_merge(existing, value)
    else:
        node[keys[-1]] = value


def _deep_merge(base: ConfigData, extra: ConfigData) -> None:
    for key, value in extra.items():
        if isinstance(base.get(key), dict) and isinstance(value, dict):
            _deep_merge(base[key], value)
        else:
            base[key] = value
