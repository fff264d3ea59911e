"""Collectors: plugins in ``collectors/<name>/`` that bring outside data into the workspace on schedules.

- ``manager``: ``CollectorManager`` discovers, loads and describes the plugins (the ``[Collectors]`` text).
- ``loader``: one plugin folder into a ``Collector`` record (constants or ``register()``), config sections.
- ``runner``: ``CollectorRunner`` runs them on their schedules, with backoff, ``new.json`` and ``runs.jsonl``.
- ``state``: per-collector state and the cursor a plugin keeps between runs.
- ``notify``: which new items are worth a message to the owner.

The names below are the contract for plugin authors and the host; import them from here.
"""

from assistant_framework.collectors.loader import Collector, CollectorLoadError
from assistant_framework.collectors.manager import BUILTIN_DIR, CollectorManager
from assistant_framework.collectors.runner import CollectorRunner, RunOutcome
from assistant_framework.collectors.state import load_cursor, save_cursor

__all__ = [
    "BUILTIN_DIR",
    "Collector",
    "CollectorLoadError",
    "CollectorManager",
    "CollectorRunner",
    "RunOutcome",
    "load_cursor",
    "save_cursor",
]
