"""A stop switch that hangs up the model call in flight: ``/stop`` or Ctrl-C while a local model still reads
the prompt (no token streamed yet) closes the connection at once, instead of waiting for the first token."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class StopSwitch(threading.Event):
    """A ``threading.Event`` whose ``set()`` also runs the hooks registered with ``on_set`` (the model
    client registers one that cuts its connection for the length of a call)."""

    def __init__(self) -> None:
        super().__init__()
        #: Why it was set, as the turn's trace says it ("" for the owner's /stop or Ctrl-C).
        self.why = ""
        self._hooks: list[Callable[[], None]] = []
        self._hooks_lock = threading.Lock()

    def set(self) -> None:
        super().set()
        with self._hooks_lock:
            hooks = list(self._hooks)
        for hook in hooks:
            hook()

    @contextlib.contextmanager
    def on_set(self, hook: Callable[[], None]) -> Iterator[None]:
        """Run ``hook`` when the switch is set while the block runs (at once when it already is)."""
        with self._hooks_lock:
            self._hooks.append(hook)
        try:
            if self.is_set():
                hook()
            yield
        finally:
            with self._hooks_lock:
                self._hooks.remove(hook)


def hang_up_on(stop: threading.Event | None, hang_up: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
    """``stop.on_set(hang_up)`` for a ``StopSwitch``; nothing for a plain Event or None (a stop is then seen
    at the next streamed piece, or when the call returns)."""
    if isinstance(stop, StopSwitch):
        return stop.on_set(hang_up)
    return contextlib.nullcontext()
