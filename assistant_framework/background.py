"""One background thread with a queue, so slow upkeep never delays a reply.

Used by the memory module (extraction, episodes, the index timer) and by the trace writer.
Jobs run one at a time in submission order; a failing job is logged with its label.

``FOREGROUND`` counts the work a user waits for (a turn, a reply on its way out): a worker made with
``yield_seconds`` starts each job once none is in progress, or after that many seconds at most, so
the index, the trace and the like are written after the reply is out, not while it is made and sent.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger(__name__)
_STOP = object()


class InProgress:
    """A count of work in progress that other work waits to be over: ``FOREGROUND``, what a user waits
    for (turns, replies being sent); the memory index's searches."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._active = 0
        self._hurry = 0  # callers waiting for a worker's queue (drain, stop): nothing yields meanwhile

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """The block is work in progress; nests and may be entered from any thread or task."""
        with self._changed:
            self._active += 1
        try:
            yield
        finally:
            with self._changed:
                self._active -= 1
                if not self._active:
                    self._changed.notify_all()

    @property
    def busy(self) -> bool:
        """True while some is in progress."""
        return self._active > 0

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is in progress (or someone drains a queue: ``hurried``), at most ``timeout``
        seconds; False when some still is."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._active or self._hurry > 0, timeout)

    @contextlib.contextmanager
    def hurried(self) -> Iterator[None]:
        """While the block runs, workers do not yield (a drain or stop waits for their queue)."""
        with self._changed:
            self._hurry += 1
            self._changed.notify_all()
        try:
            yield
        finally:
            with self._changed:
                self._hurry -= 1


#: The process's one count of work a user waits for (``InProgress.active``).
FOREGROUND = InProgress()


class BackgroundWorker:
    """Runs submitted jobs in order; ``on_idle`` runs every ``idle_seconds`` without jobs.

    The thread starts with the first job (or at once with ``on_idle``), so creating a worker
    at import time starts nothing. With ``yield_seconds`` each submitted job first waits for
    ``FOREGROUND`` to be idle, at most until that long after it was submitted.
    """

    def __init__(
        self,
        name: str,
        on_idle: Callable[[], None] | None = None,
        idle_seconds: float = 60.0,
        *,
        yield_seconds: float = 0.0,
    ) -> None:
        self.name = name
        self.yield_seconds = yield_seconds
        self._queue: queue.Queue[Any] = queue.Queue()
        self._on_idle = on_idle
        #: Read before each wait: a new value (``/reload``) holds from the next wait on.
        self.idle_seconds = idle_seconds
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        if on_idle is not None:
            self._ensure_thread()

    def _ensure_thread(self) -> None:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def submit(self, job: Callable[[], object], label: str) -> None:
        """Queue a job (what it returns is dropped); failures are logged with the label, never raised."""
        self._ensure_thread()
        self._queue.put((job, label, time.monotonic()))

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=self.idle_seconds if self._on_idle else None)
            except queue.Empty:
                self._safe(self._on_idle, "periodic upkeep")
                continue
            try:
                if item is _STOP:
                    return
                job, label, submitted = item
                # At most yield_seconds after the job was submitted, not per job: a queue that waited once
                # runs on while replies keep coming (a bot never idle falls no further behind than that).
                wait = submitted + self.yield_seconds - time.monotonic()
                if wait > 0:
                    FOREGROUND.wait_idle(wait)
                self._safe(job, label)
            finally:
                self._queue.task_done()

    def _safe(self, job: Callable[[], None] | None, label: str) -> None:
        if job is None:
            return
        try:
            job()
        except Exception as exc:  # a full disk or a bad model answer must not stop later jobs
            # One line: the terminal chat must not show a traceback between the user's lines.
            log.warning(
                "%s: background job %r failed: %s: %s",
                self.name,
                label,
                type(exc).__name__,
                " ".join(str(exc).split())[:200],
            )
            log.debug("%s: traceback of background job %r", self.name, label, exc_info=True)

    def drain(self, timeout: float) -> bool:
        """Wait until every queued job has run; False on timeout (at once when called from a job)."""
        if threading.current_thread() is self._thread:
            return not self._queue.unfinished_tasks
        deadline = time.monotonic() + timeout
        with FOREGROUND.hurried(), self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def stop(self, timeout: float = 5.0) -> None:
        """Finish the queued jobs, then end the thread (waits at most ``timeout``)."""
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(_STOP)
            with FOREGROUND.hurried():
                self._thread.join(timeout)
