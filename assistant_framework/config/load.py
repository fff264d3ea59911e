"""Loading a config: one file or a tree (with its ``local/`` layer), ``${ENV}`` substituted, validated."""

from __future__ import annotations

import os
from pathlib import Path

from assistant_framework.config.env import TOKEN_ENV, _substitute_env
from assistant_framework.config.errors import ConfigData, ConfigError, LoadedConfig, _display
from assistant_framework.config.parse import _parse_file
from assistant_framework.config.tree import LOCAL_DIR, _config_files, _set_path
from assistant_framework.config.validate import validate_config


def load_config(
    path: str | os.PathLike[str], *, validate: bool = True, env: bool = True, local: bool = True
) -> ConfigData:
    """Load, merge, substitute and validate a config; raises ConfigError with file and path.

    ``local=False`` leaves out the ``local/`` layer (the tests of the example config do, so
    they never read a user's own settings).
    """
    return load_config_detailed(path, validate=validate, env=env, local=local).data


def load_config_detailed(
    path: str | os.PathLike[str], *, validate: bool = True, env: bool = True, local: bool = True
) -> LoadedConfig:
    """Like load_config, keeping which file supplied which key."""
    root = Path(path)
    if not root.exists():
        raise ConfigError(f"{_display(root)}: config file or directory does not exist")
    loaded = LoadedConfig(data={}, root=root)
    if root.is_file():
        value = _parse_file(root)
        if not isinstance(value, dict):
            raise ConfigError(f"{_display(root)}: (top level): expected an object, got {type(value).__name__}")
        loaded.data = value
        loaded.sources[root] = ()
        loaded.raw[root] = value
    else:
        files = _config_files(root)
        if local and (root / LOCAL_DIR).is_dir():
            files += _config_files(root / LOCAL_DIR, skip_local=False)
        for file, keys in files:
            value = _parse_file(file)
            _set_path(loaded.data, keys, value, file)
            loaded.sources[file] = keys
            loaded.raw[file] = value
    if env:
        loaded.data = _substitute_env(loaded.data, (), loaded)
        token = os.environ.get(TOKEN_ENV)
        if token:
            loaded.data.setdefault("telegram", {})
            if isinstance(loaded.data["telegram"], dict):
                loaded.data["telegram"]["token"] = token
    if validate:
        errors = validate_config(loaded)
        if errors:
            raise ConfigError("\n".join(errors))
    return loaded
