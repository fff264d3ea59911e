"""Small per-chat choices and notes of the chat frontends: ``conversations/<chat>/flags.json``.

What a chat chose (``/voice on``) and what it was told once (that the model cannot see images). A
missing or damaged file reads as no flags (the worst case: a notice is said once more); a write that
fails is logged and the answer goes on.
"""

from __future__ import annotations

import logging
import threading

from assistant_framework.json_types import JsonObject
from assistant_framework.memory.log import CONVERSATIONS_DIR, safe_conversation_id
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

FLAGS_FILE = "flags.json"


class ChatFlags:
    """Read and write one chat's flags (thread-safe within the process)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._lock = threading.Lock()

    def _rel(self, conversation_id: str) -> str:
        return f"{CONVERSATIONS_DIR}/{safe_conversation_id(conversation_id)}/{FLAGS_FILE}"

    def _read(self, conversation_id: str) -> JsonObject:
        try:
            flags = self.workspace.read_json(self._rel(conversation_id), default={})
        except (ValueError, UnicodeDecodeError, OSError):
            return {}
        return flags if isinstance(flags, dict) else {}

    def get(self, conversation_id: str, name: str) -> object:
        """The flag's value, None when the chat has none."""
        with self._lock:
            return self._read(conversation_id).get(name)

    def set(self, conversation_id: str, name: str, value: object) -> None:
        """Set a flag (None removes it); raises OSError when it cannot be written."""
        with self._lock:
            flags = self._read(conversation_id)
            if value is None:
                flags.pop(name, None)
            else:
                flags[name] = value
            self.workspace.write_json(self._rel(conversation_id), flags)

    def first_time(self, conversation_id: str, name: str) -> bool:
        """True the first time a chat is asked about ``name`` (noted then, so the next time is False)."""
        with self._lock:
            flags = self._read(conversation_id)
            if flags.get(name):
                return False
            try:
                self.workspace.write_json(self._rel(conversation_id), {**flags, name: True})
            except OSError as err:  # telling twice is better than failing the answer
                log.warning("could not note %s for %s: %s", name, conversation_id, err)
            return True
