"""Config keys as the CLI writes them: ``llm.runners[0].model`` parsed, looked up, and CLI values read."""

from __future__ import annotations

import json
import re
from typing import Any

from assistant_framework.config.errors import ConfigData, ConfigError, JsonPath, format_json_path
from assistant_framework.config.limits import MAX_DEPTH, json_too_deep
from assistant_framework.config.parse import FINITE_JSON

_KEY_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")

#: A name of a key may not hold these: its names become folder and file names below the config root.
_NOT_IN_A_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")
#: The longest name of a key (the config's own are under 40 characters; a file name has at most 255 bytes).
MAX_NAME_CHARS = 100


def check_key_names(keys: JsonPath, dotted: str | JsonPath = "") -> None:
    """Refuse (ConfigError) a key whose names could leave the config folder or name no file: an empty
    name, ``.`` or ``..``, a path separator (``/etc/passwd``, ``/llm.model``), a control character, or a
    name longer than ``MAX_NAME_CHARS``."""
    for name in keys:
        if isinstance(name, int):
            continue
        if (
            not isinstance(name, str)
            or name.strip() in ("", ".", "..")
            or _NOT_IN_A_NAME.search(name)
            or len(name) > MAX_NAME_CHARS
        ):
            shown = dotted if isinstance(dotted, str) and dotted else ".".join(str(k) for k in keys)
            raise ConfigError(
                f"config key {_short(shown)!r}: {_short(str(name))!r} is not a config name (a key is names joined "
                f"by dots, e.g. llm.max_tokens or collectors.rss.enabled; no '/', '\\', '..', empty names or "
                f"names over {MAX_NAME_CHARS} characters)"
            )


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_key(dotted: str) -> JsonPath:
    """``llm.runners[0].model`` (or ``llm.runners.0.model``) -> ``("llm", "runners", 0, "model")``."""
    text = dotted.strip()
    parts: list[str | int] = []
    pos = 0
    while pos < len(text):
        if text[pos] == "." and parts:
            pos += 1
        match = _KEY_PART.match(text, pos)
        if not match:
            raise ConfigError(
                f"config key {dotted!r}: cannot read it at {text[pos:]!r} (write e.g. llm.runners[0].model)"
            )
        name, index = match.groups()
        parts.append(int(index) if index is not None else (int(name) if name.isdigit() else name))
        pos = match.end()
    if not parts or not isinstance(parts[0], str):
        raise ConfigError(f"config key {dotted!r} must start with a section name, e.g. llm.max_tokens")
    check_key_names(tuple(parts), dotted)
    return tuple(parts)


def get_key(data: ConfigData, dotted: str | JsonPath, default: Any = KeyError) -> Any:
    """The value at a key such as ``llm.runners[0].model``; raises KeyError naming it when missing."""
    node: Any = data
    parts = parse_key(dotted) if isinstance(dotted, str) else dotted
    for part in parts:
        if isinstance(node, dict) and str(part) in node:
            node = node[str(part)]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            if default is KeyError:
                raise KeyError(
                    f"config key {dotted if isinstance(dotted, str) else format_json_path(dotted)!r} is not set"
                )
            return default
    return node


def parse_cli_value(text: str) -> Any:
    """A CLI value: JSON when it parses, otherwise the string itself; NaN, Infinity and 1e999 are refused."""
    if json_too_deep(text) is not None:
        raise ConfigError(f"value nested more than {MAX_DEPTH} levels deep")
    try:
        return json.loads(text, **FINITE_JSON)
    except json.JSONDecodeError:
        return text
    except ValueError as exc:
        raise ConfigError(f"value {text[:40]!r}: {exc}") from None
