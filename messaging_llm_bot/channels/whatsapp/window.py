"""WhatsApp's customer service window: free-form messages only within 24 hours of the user's last message.

Outside it only an approved template may be sent (the Cloud API takes a free-form message there and then
fails it with error 131047, so the channel must know the window itself). The time of each user's last
message (Meta's ``timestamp``) is kept in ``state/whatsapp/window.json`` (private, atomic), so a restart
knows it. A minute of margin: a message sent at 23:59:30 might reach Meta after the window closed.
"""

from __future__ import annotations

import threading
import time
from typing import Any

WINDOW_SECONDS = 24 * 3600
MARGIN_SECONDS = 60
STATE_FILE = "state/whatsapp/window.json"


class ServiceWindow:
    """The last message's time per ``wa_id``; thread-safe."""

    def __init__(self, workspace: Any) -> None:
        self.workspace = workspace
        self._lock = threading.Lock()
        try:
            data = workspace.read_json(STATE_FILE, default={})
        except (OSError, ValueError):  # a damaged file: the windows are unknown (closed) until each writes again
            data = {}
        last = data.get("last") if isinstance(data, dict) else None
        self._last: dict[str, float] = {
            str(k): float(v) for k, v in (last or {}).items() if isinstance(v, (int, float))
        }

    def saw(self, number: str, timestamp: float) -> None:
        """``number`` wrote at ``timestamp`` (a later time than the last one known opens the window again)."""
        with self._lock:
            if timestamp <= self._last.get(number, 0.0):
                return
            self._last[number] = timestamp
            self.workspace.write_json(STATE_FILE, {"last": dict(self._last)}, durable=False)

    def is_open(self, number: str, now: float | None = None) -> bool:
        """A free-form message to ``number`` now would be delivered."""
        with self._lock:
            last = self._last.get(number)
        if last is None:
            return False
        return (time.time() if now is None else now) - last < WINDOW_SECONDS - MARGIN_SECONDS
