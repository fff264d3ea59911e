"""Collectors: plugins in ``collectors/<name>/`` that bring outside data into the workspace on schedules.

- ``manager``: ``CollectorManager`` discovers, loads and describes the plugins (the ``[Collectors]`` text).
- ``loader``: one plugin folder into a ``Collector`` record, checked against ``spec``; config sections.
- ``spec``: the plugin contract (the fields, ``run(workspace, config)``, ``CollectorResult``).
- ``runner``: ``CollectorRunner`` runs them on their schedules, with backoff, ``new.json`` and ``runs.jsonl``.
- ``outcome``: one run in its worker thread, what it returned (``RunOutcome``) and the files it changed.
- ``state``: per-collector state and the cursor a plugin keeps between runs.
- ``notify``: which new items are worth a message to the owner.
- ``check``: a whole config checked with the collectors' section schemas and names (``plugin_schema_errors``).

The names below are the contract for plugin authors and the host; import them from here.
"""

from __future__ import annotations

import importlib
from typing import Any

# Each name from its module, imported on first use (PEP 562): importing one small part of the
# package (``collectors.days`` for the /now digest, say) does not load the runner and the loader,
# which the bot's first poll does not need.
_WHERE = {
    "BUILTIN_DIR": "manager",
    "Collector": "loader",
    "CollectorLoadError": "loader",
    "CollectorManager": "manager",
    "CollectorRunner": "runner",
    "RunOutcome": "outcome",
    "load_cursor": "state",
    "plugin_schema_errors": "check",
    "save_cursor": "state",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


__all__ = [
    "BUILTIN_DIR",
    "Collector",
    "CollectorLoadError",
    "CollectorManager",
    "CollectorRunner",
    "RunOutcome",
    "load_cursor",
    "plugin_schema_errors",
    "save_cursor",
]
