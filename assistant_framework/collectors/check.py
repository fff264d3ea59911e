"""A whole config checked the way the bot will use it: the schema, the start-up checks, and what the collectors
add (each one's schema for its section, and no section for a collector that does not exist).

``assistant config validate``, ``config set`` (``write_setting``), ``setup`` and ``doctor`` all ask here.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from assistant_framework.collectors.manager import CollectorManager
from assistant_framework.config import LoadedConfig, format_json_path, validate_config
from assistant_framework.config.checks import did_you_mean
from assistant_framework.config.errors import ConfigData, display_path
from assistant_framework.config.settings import RuntimeSettings
from assistant_framework.config.settings.fields import read_record
from assistant_framework.workspace import Workspace


def unchecked_manager(data: ConfigData, workspace: Workspace) -> CollectorManager:
    """The collectors of a config not checked yet (their schemas check it): only its runtime section is read
    into its record (a value it cannot take is a ConfigError naming the key)."""
    runtime = read_record(RuntimeSettings, data.get("runtime"), where="runtime")
    return CollectorManager.from_settings(runtime, data.get("collectors"), workspace)


def plugin_schema_errors(loaded: LoadedConfig) -> list[str]:
    """Every problem of ``loaded`` as ``file: json.path: message``: the config schema and checks, the collectors'
    section schemas, and unknown collector names (with a did-you-mean)."""
    # Loading the plugins (imported here, on each check) reads no workspace; the manager only needs one for status().
    manager = unchecked_manager(loaded.data, Workspace(Path(tempfile.gettempdir()) / "assistant-unused", create=False))
    errors = validate_config(loaded, extra_schemas=manager.schemas())
    known = set(manager.collectors) | {error.name for error in manager.errors}
    section = loaded.data.get("collectors")
    for name in section if isinstance(section, dict) else {}:
        if name not in known:
            file, rel = loaded.source_of(("collectors", name))
            errors.append(
                f"{display_path(file)}: {format_json_path(rel)}: unknown collector {name!r}{did_you_mean(name, known)}"
            )
    return errors
