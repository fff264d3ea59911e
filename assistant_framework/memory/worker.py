"""One background thread with a queue: extraction, episodes and the index timer never delay a reply."""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)
_STOP = object()


class BackgroundWorker:
    """Runs submitted jobs one at a time; ``on_idle`` runs every ``idle_seconds`` without jobs."""

    def __init__(self, name: str, on_idle: Callable[[], None] | None = None, idle_seconds: float = 60.0) -> None:
        self._queue: queue.Queue = queue.Queue()
        self._on_idle = on_idle
        self._idle_seconds = idle_seconds
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None], label: str) -> None:
        """Queue a job; failures are logged with the label, never raised."""
        self._queue.put((job, label))

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=self._idle_seconds if self._on_idle else None)
            except queue.Empty:
                self._safe(self._on_idle, "periodic refresh")
                continue
            try:
                if item is _STOP:
                    return
                job, label = item
                self._safe(job, label)
            finally:
                self._queue.task_done()

    @staticmethod
    def _safe(job: Callable[[], None] | None, label: str) -> None:
        if job is None:
            return
        try:
            job()
        except Exception:
            log.exception("memory background job %r failed", label)

    def drain(self, timeout: float) -> bool:
        """Wait until every queued job has run; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout)
