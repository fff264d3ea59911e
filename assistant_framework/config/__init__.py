"""Config loading: one JSON/YAML file or a directory tree, env substitution, schema validation.

In a directory every file maps to a key by its path (``llm.json`` -> ``llm``,
``collectors/rss.json`` -> ``collectors.rss``); an ``index.json`` supplies its
folder's own key. Errors name the file and the JSON path inside it.

A directory config has a second, git-ignored layer in ``<dir>/local/`` (same layout),
merged over the rest: ``assistant config set`` and ``assistant setup`` write there, so
a user's settings and secrets never land in a tracked file.

The parts:

- ``load``: ``load_config`` / ``load_config_detailed``, the steps below in order.
- ``parse``: one file, JSON or YAML, within the ``limits`` (YAML aliases, nesting depth).
- ``tree``: a directory, file paths to keys, the ``local/`` layer, merging.
- ``env``: ``${VAR}`` references and ``TELEGRAM_BOT_TOKEN`` in; ``redact`` keeps secrets out of output.
- ``validate``: the JSON ``schema`` and the ``checks`` beyond it, as ``file: json.path: message``.
- ``errors``: ``ConfigError``, ``format_json_path``, ``LoadedConfig`` (which file supplied which key).
- ``keys``: ``llm.runners[0].model`` parsed and looked up; CLI values.
- ``write``: ``config set``: the file that owns a key, changed atomically in its own style.
- ``settings``: one frozen record per section (``Settings.from_config(data)``), each key's default in its field.
- ``defaults``: the defaults ``config get/show`` fill in, derived from the records.
- ``sections``: the sections a plugin declares with a record of its own (a channel's), handed over by the bot.

The names below are the API for the framework, the bot and plugins; import them from here.
"""

from __future__ import annotations

from assistant_framework.config.env import REDACTED, SECRET_KEY, TOKEN_ENV, redact
from assistant_framework.config.errors import ConfigError, LoadedConfig, format_json_path
from assistant_framework.config.keys import get_key, parse_cli_value, parse_key
from assistant_framework.config.load import load_config, load_config_detailed
from assistant_framework.config.parse import CONFIG_SUFFIXES
from assistant_framework.config.tree import INDEX_STEM, LOCAL_DIR
from assistant_framework.config.validate import validate_config
from assistant_framework.config.write import owner_file, set_in_file, set_key

__all__ = [
    "CONFIG_SUFFIXES",
    "INDEX_STEM",
    "LOCAL_DIR",
    "REDACTED",
    "SECRET_KEY",
    "TOKEN_ENV",
    "ConfigError",
    "LoadedConfig",
    "format_json_path",
    "get_key",
    "load_config",
    "load_config_detailed",
    "owner_file",
    "parse_cli_value",
    "parse_key",
    "redact",
    "set_in_file",
    "set_key",
    "validate_config",
]
