"""The model runner a chat (or forum topic) chose with ``/model``: ``conversations/<place>/model.json``.

The choice is read at the start of every turn (under the place's lock), so a switch applies to the
very next model request, and it is a file, so it survives a restart (hermes#37621: "switch confirmed
but not applied"). The chosen runner is asked first; the configured order still follows it as the
fallback. A choice naming a runner the config no longer has is ignored (the default answers) and kept,
so it applies again once the runner is back. A missing or damaged file means the default.
"""

from __future__ import annotations

import logging
import threading

from assistant_framework.memory.log import CONVERSATIONS_DIR, safe_conversation_id
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

CHOICE_FILE = "model.json"
#: A runner name longer than this is no name of ours (config names are short): never stored.
MAX_NAME_CHARS = 100


class RunnerChoices:
    """Read and write each place's chosen runner (thread-safe within the process)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._lock = threading.Lock()

    def _rel(self, place: str) -> str:
        return f"{CONVERSATIONS_DIR}/{safe_conversation_id(place)}/{CHOICE_FILE}"

    def get(self, place: str) -> str | None:
        """The runner name the place chose, None for the default (no choice, or an unreadable file)."""
        with self._lock:
            try:
                data = self.workspace.read_json(self._rel(place), default={})
            except (ValueError, UnicodeDecodeError, OSError) as err:
                log.warning("the model choice of %r is unreadable; the default runner answers: %s", place, err)
                return None
        name = data.get("runner") if isinstance(data, dict) else None
        return name if isinstance(name, str) and 0 < len(name) <= MAX_NAME_CHARS else None

    def set(self, place: str, runner: str | None) -> None:
        """Choose ``runner`` for the place (None: back to the default); raises OSError when it cannot be written."""
        with self._lock:
            if runner is None:
                self.workspace.delete(self._rel(place))
            else:
                self.workspace.write_json(self._rel(place), {"runner": runner[:MAX_NAME_CHARS]})
