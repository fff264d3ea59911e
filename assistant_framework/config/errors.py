"""How config problems are reported: ``ConfigError``, naming the file and the JSON path inside it.

``LoadedConfig`` remembers which file supplied which key, so a message about a merged value
(a schema error, a missing ``${ENV}``) names the file a user has to edit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assistant_framework.json_types import JsonObject

#: Where a value sits in the config: section and key names, list indexes (``("llm", "runners", 0, "model")``).
JsonPath = tuple[str | int, ...]
#: A parsed config (or one file of it): JSON objects, lists and scalars under string keys.
ConfigData = JsonObject


class ConfigError(Exception):
    """A config problem; the message names the file and the JSON path."""


@dataclass
class LoadedConfig:
    """A merged config plus where each part came from (for error messages and ``config set``)."""

    data: ConfigData
    root: Path
    #: file -> key prefix it supplies, e.g. config/llm.json -> ("llm",), in merge order
    sources: dict[Path, tuple[str, ...]] = field(default_factory=dict)
    #: file -> its parsed content, to tell which layer holds a key
    raw: dict[Path, Any] = field(default_factory=dict)

    def source_of(self, path: JsonPath) -> tuple[Path, JsonPath]:
        """The file that supplied a JSON path, and the path relative to that file.

        The deepest prefix wins; between files with the same prefix (a tracked file and its
        local override) the later one wins when it holds the key.
        """
        best: tuple[Path, tuple[str, ...]] | None = None
        for file, prefix in self.sources.items():
            if tuple(path[: len(prefix)]) != prefix:
                continue
            if (
                best is None
                or len(prefix) > len(best[1])
                or (len(prefix) == len(best[1]) and _holds(self.raw.get(file), tuple(path[len(prefix) :])))
            ):
                best = (file, prefix)
        if best is None:
            return self.root, tuple(path)
        return best[0], tuple(path[len(best[1]) :])


def _holds(data: Any, path: JsonPath) -> bool:
    """Whether ``data`` has a value at the first step of ``path`` (any value when path is empty)."""
    if not path:
        return data is not None
    return isinstance(data, dict) and path[0] in data


_NAME_LIKE = re.compile(r"[A-Za-z0-9_.@ -]{1,64}")


def shown_key(key: object) -> str:
    """A key as an error shows it: itself when it looks like a config name, else only its size.
    ``--config`` pointed at the wrong file (a key file, /etc/shadow) must not print its lines."""
    text = str(key)
    return text if _NAME_LIKE.fullmatch(text) else f"<a {len(text)}-character key that is no config name>"


def format_json_path(path: Sequence[str | int]) -> str:
    """``("runners", 0, "base_url")`` -> ``runners[0].base_url``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + shown_key(part)
    return out or "(top level)"


def display_path(path: Path) -> str:
    """A path as a message shows it: relative to the current folder where it can be."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


_display = display_path
