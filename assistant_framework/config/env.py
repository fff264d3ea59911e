"""Secrets in config: how they get in (``${VAR}`` references, ``TELEGRAM_BOT_TOKEN``) and how
they stay out of what is shown (``redact``; ``SECRET_KEY`` is shared with traces and the audit log).
"""

from __future__ import annotations

import os
import re
from typing import Any

from assistant_framework.config.errors import ConfigError, JsonPath, LoadedConfig, _display, format_json_path

TOKEN_ENV = "TELEGRAM_BOT_TOKEN"
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
#: Config and argument keys whose values are secrets (shared by config show, traces and the audit log).
SECRET_KEY = re.compile(
    r"(token|api[_-]?key|password|passwd|passphrase|pwd|secret|credential|private[_-]?key|authorization|cookie)",
    re.IGNORECASE,
)
REDACTED = "***"


def _substitute_env(value: Any, path: JsonPath, loaded: LoadedConfig) -> Any:
    if isinstance(value, dict):
        return {k: _substitute_env(v, path + (k,), loaded) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute_env(v, path + (i,), loaded) for i, v in enumerate(value)]
    if isinstance(value, str):
        match = _ENV_REF.match(value.strip())
        if match:
            name = match.group(1)
            if name not in os.environ:
                file, rel = loaded.source_of(path)
                raise ConfigError(f"{_display(file)}: {format_json_path(rel)}: environment variable {name} is not set")
            return os.environ[name]
    return value


def is_env_reference(value: Any) -> bool:
    """Whether ``value`` is a ``"${NAME}"`` reference (left as it is when a config is read with ``env=False``)."""
    return isinstance(value, str) and _ENV_REF.match(value.strip()) is not None


def redact(value: Any, key: str = "") -> Any:
    """A copy with secrets (tokens, keys, passwords) replaced by ``***``."""
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if key and SECRET_KEY.search(key) and isinstance(value, str) and value:
        return REDACTED
    return value
