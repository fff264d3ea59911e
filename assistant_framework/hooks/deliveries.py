"""``state/hooks/deliveries.log``: the deliveries each hook already took, so the same delivery sent twice (a
sender's retry, a replayed request) runs once, across restarts.

A delivery is known by its sender's id (``X-Delivery-Id``, GitHub's ``X-GitHub-Delivery``), else by the
body's SHA-256: the same body without an id is taken once. The log keeps a fixed-size key per delivery
(a hash of the hook's name and the id, never the sender's text), one a line, newest last; at start it is
cut to the ``KEEP`` newest, and while running it holds at most twice as many. An unreadable line is skipped.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict

from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

DELIVERIES_LOG = "state/hooks/deliveries.log"
#: Deliveries remembered across a restart (a sender retries within hours; GitHub redelivers within days).
KEEP = 10_000
#: The longest delivery id taken; a longer one is refused (400).
MAX_ID_CHARS = 200


def delivery_key(hook: str, delivery_id: str | None, body: bytes) -> str:
    """The log's key of one delivery: by the sender's id, else by the body."""
    what = f"id:{delivery_id}" if delivery_id else "body:" + hashlib.sha256(body).hexdigest()
    return hashlib.sha256(f"{hook}\0{what}".encode()).hexdigest()[:40]


class Deliveries:
    """The keys of the deliveries taken, in memory and in the log (one lock for both)."""

    def __init__(self, workspace: Workspace, keep: int = KEEP) -> None:
        self.ws = workspace
        self.keep = keep
        self._lock = threading.Lock()
        self._keys: OrderedDict[str, None] = OrderedDict.fromkeys(self._load())

    def taken(self, key: str) -> bool:
        with self._lock:
            return key in self._keys

    def record(self, key: str) -> None:
        """Remember a delivery (appended to the log before this returns)."""
        with self._lock:
            if key in self._keys:
                return
            self.ws.append_line(DELIVERIES_LOG, key)
            self._keys[key] = None
            if len(self._keys) > 2 * self.keep:
                self._compact()

    def _compact(self) -> None:
        while len(self._keys) > self.keep:
            self._keys.popitem(last=False)
        self.ws.write_text(DELIVERIES_LOG, "".join(f"{key}\n" for key in self._keys))

    def _load(self) -> list[str]:
        try:
            text = self.ws.path(DELIVERIES_LOG).read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            text = ""
        keys = [line.strip() for line in text.splitlines() if _is_key(line.strip())]
        if len(keys) > self.keep:
            keys = keys[-self.keep :]
            self.ws.write_text(DELIVERIES_LOG, "".join(f"{key}\n" for key in keys))
            log.info("hooks: %s cut to the %d newest deliveries", DELIVERIES_LOG, len(keys))
        return keys


def _is_key(line: str) -> bool:
    return len(line) == 40 and all(c in "0123456789abcdef" for c in line)
