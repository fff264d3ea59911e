"""CollectorRunner: runs enabled collectors on their schedules, isolated and persisted.

Each run happens in a daemon worker thread with a timeout; a hung run is
abandoned and the collector is not started again while that thread lives.
Failures back off exponentially. The schedule state is kept in
``state/collectors/<name>.json`` so a restart resumes rather than re-running
everything; runs missed while the process was down coalesce into one.

One run in its worker thread, what it returned and the files it changed are ``outcome.py``;
what ``run`` may return is ``spec.CollectorResult``.

A run's files go to the memory index by call (``Indexer``) before the run is recorded as
ended, so a search right after it finds the new items.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from assistant_framework.collectors.notify import matching_items, notify_text
from assistant_framework.collectors.outcome import (
    NEW_FILE,
    RUNS_CAP,
    RUNS_FILE,
    Attempt,
    RunOutcome,
    apply_result,
    changed_files,
    run_in_worker,
    snapshot,
)
from assistant_framework.collectors.runlock import RunLock, runs_elsewhere, take_run_lock
from assistant_framework.collectors.spec import CollectorItem
from assistant_framework.collectors.state import load_state, merge_sources, update_state
from assistant_framework.collectors.triage import TriageBudget, ask_model, ask_rules
from assistant_framework.schedules import (
    DEFAULT_MAX_BACKOFF_SECONDS,
    DEFAULT_RETRY_BASE_SECONDS,
    as_utc,
    backoff_seconds,
    from_iso,
    next_regular_run,
    to_iso,
    zone,
)
from assistant_framework.workspace import Workspace

if TYPE_CHECKING:
    from assistant_framework.collectors.loader import Collector
    from assistant_framework.collectors.manager import CollectorManager

log = logging.getLogger(__name__)

MIN_LOOP_SLEEP = 0.2
MAX_LOOP_SLEEP = 30.0
#: The longest ``run_forever`` (the foreground ``collectors run-loop``) waits before it reads a Ctrl-C.
CTRL_C_SLICE_SECONDS = 0.5


class Indexer(Protocol):
    """What a run hands the files it wrote (and removed) to: the memory index (``MemoryService``)."""

    def index_files(self, paths: Sequence[str]) -> int:
        """Bring these workspace-relative files into the index now."""
        ...


class CollectorRunner:
    """Schedules and runs the manager's enabled collectors."""

    def __init__(
        self,
        manager: CollectorManager,
        workspace: Workspace,
        *,
        timezone: str = "UTC",
        notify: Callable[[str, str], None] | None = None,
        complete: Callable[..., str] | None = None,
        indexer: Indexer | None = None,
        clock: Callable[[], datetime] | None = None,
        retry_base_seconds: float = DEFAULT_RETRY_BASE_SECONDS,
        max_backoff_seconds: float = DEFAULT_MAX_BACKOFF_SECONDS,
    ) -> None:
        zone(timezone)  # fail at construction, naming the bad timezone
        self.manager = manager
        self.workspace = workspace
        self.timezone = timezone
        self.notify = notify
        self.complete = complete  # the model, for ``ask`` notify rules (collectors/triage.py); None: they ask nothing
        self.indexer = indexer  # the memory index; None: memory is off (or its refresh finds the files later)
        self.clock = clock or (lambda: datetime.now(tz=_UTC))
        self.retry_base_seconds = retry_base_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self._lock = threading.Lock()
        self._busy: dict[str, threading.Thread | None] = {}
        self._supervisors: list[threading.Thread] = []
        self._stop = threading.Event()
        self._loop_thread: threading.Thread | None = None
        # ``start`` and ``stop`` may come from two threads at once (the bot starting its background work while a
        # /reload replaces this runner): a stop that came first leaves the runner stopped for good.
        self._lifecycle = threading.Lock()
        self._closed = False

    # -- one run -----------------------------------------------------------

    def run_once(self, name: str) -> RunOutcome:
        """Run one collector now in a worker thread (with its timeout) and record the result."""
        collector = self.manager.get(name)
        if not self._reserve(name):
            return RunOutcome(
                name=name, outcome="skipped", error=f"collector {name!r} is still running (previous run not finished)"
            )
        # Another process (the bot, `collectors run`, `run-loop`) may be running it: then this one does not.
        run_lock = take_run_lock(self.workspace, name)
        if run_lock is None:
            self._free(name)
            return RunOutcome(
                name=name,
                outcome="skipped",
                error=f"collector {name!r} is running in another process now (the bot, or another run); not run again",
            )
        worker: threading.Thread | None = None
        abandoned = threading.Event()
        attempt = Attempt()
        try:
            started_at = self._now()
            update_state(self.workspace, name, last_start=to_iso(started_at))
            before = snapshot(self.workspace, name)
            worker = threading.Thread(
                target=_run_then_release,
                args=(collector, self.workspace, attempt, run_lock, abandoned),
                name=f"collector-{name}",
                daemon=True,
            )
            t0 = time.monotonic()
            worker.start()
            finished = attempt.done.wait(collector.timeout_seconds)
            duration = round(time.monotonic() - t0, 3)
            if not finished:
                # A hung worker keeps the slot and the run lock (it lets the lock go when it ends), so the
                # collector is not started twice, here or in another process.
                with self._lock:
                    self._busy[name] = worker
                abandoned.set()
            return self._finish(collector, attempt, finished, before, started_at, duration)
        finally:
            if worker is None or not abandoned.is_set():
                # Held until the run is recorded: the next run, here or in another process, reads its state.
                self._free(name)
                run_lock.release()
            elif attempt.done.is_set():
                run_lock.release()  # the abandoned worker ended meanwhile (a second release is a no-op)

    def _free(self, name: str) -> None:
        with self._lock:
            self._busy.pop(name, None)

    def _finish(
        self,
        collector: Collector,
        attempt: Attempt,
        finished: bool,
        before: dict[str, tuple[int, int]],
        started_at: datetime,
        duration: float,
    ) -> RunOutcome:
        """The run's outcome from its attempt, recorded."""
        name = collector.name
        outcome = RunOutcome(name=name, outcome="ok", started=to_iso(started_at), duration_s=duration)
        if not finished:
            outcome.outcome = "timeout"
            outcome.error = f"collector {name!r} did not finish within {collector.timeout_seconds:g}s; run abandoned"
        elif attempt.error is not None:
            outcome.outcome = "error"
            outcome.error = attempt.error
        else:
            apply_result(outcome, attempt.result)
            outcome.written, outcome.removed = changed_files(self.workspace, name, before)
        self._record(collector, outcome, started_at)
        return outcome

    def _reserve(self, name: str) -> bool:
        with self._lock:
            if name in self._busy:
                holder = self._busy[name]
                if holder is None or holder.is_alive():
                    return False
            self._busy[name] = None
            return True

    def is_running(self, name: str) -> bool:
        """Whether a run of ``name`` is going on, in this process or another (the scheduler waits for it: a
        run it tried meanwhile would be skipped, and tried again at once, five times a second)."""
        with self._lock:
            if name in self._busy:
                holder = self._busy[name]
                if holder is None or holder.is_alive():
                    return True
        return runs_elsewhere(self.workspace, name)

    def _next_run(
        self, collector: Collector, outcome: RunOutcome, started_at: datetime, failures_before: int, now: datetime
    ) -> tuple[int, datetime]:
        """The consecutive failures after this run and when the collector runs next: its schedule after a
        success, a growing backoff after a failure."""
        if outcome.outcome == "ok":
            next_run = next_regular_run(
                interval_seconds=collector.interval_seconds,
                cron=collector.cron,
                last_start=started_at,
                now=now,
                tz_name=self.timezone,
            )
            return 0, next_run
        failures = failures_before + 1
        log.warning("collector %s: %s", collector.name, outcome.error)
        delay = backoff_seconds(failures, self.retry_base_seconds, self.max_backoff_seconds)
        return failures, now + timedelta(seconds=delay)

    def _write_run_files(self, base: str, outcome: RunOutcome) -> None:
        """The run's new items (after a success) and its line in the run log."""
        if outcome.outcome == "ok":
            self.workspace.write_json(
                f"{base}/{NEW_FILE}",
                {"run_started": outcome.started, "summary": outcome.summary, "items": outcome.new_items},
            )
        self.workspace.append_jsonl(
            f"{base}/{RUNS_FILE}",
            {
                "started": outcome.started,
                "duration_s": outcome.duration_s,
                "outcome": outcome.outcome,
                "error": outcome.error,
                "new": len(outcome.new_items),
                "written": outcome.written,
                "summary": outcome.summary,
                "errors": outcome.errors,
                **(
                    {"failed_sources": sorted(k for k, v in outcome.sources.items() if not v.get("ok"))}
                    if outcome.sources
                    else {}
                ),
            },
            RUNS_CAP,
        )

    def _record(self, collector: Collector, outcome: RunOutcome, started_at: datetime) -> None:
        name = collector.name
        state = load_state(self.workspace, name)
        now = self._now()
        failures, next_run = self._next_run(collector, outcome, started_at, state.consecutive_failures, now)
        outcome.next_run = to_iso(next_run)
        base = f"collectors/{name}"
        self._write_run_files(base, outcome)
        if outcome.outcome == "ok":
            # Before the end is recorded: whoever sees the run ended can search its items.
            self._index([*outcome.written, *outcome.removed, f"{base}/{NEW_FILE}", f"{base}/{RUNS_FILE}"], name)
        extra = (
            {"sources": merge_sources(state.sources, outcome.sources, outcome.started or to_iso(now))}
            if outcome.sources
            else {}
        )
        update_state(
            self.workspace,
            name,
            **extra,
            last_end=to_iso(now),
            duration_s=outcome.duration_s,
            outcome=outcome.outcome,
            error=outcome.error,
            next_run=outcome.next_run,
            consecutive_failures=failures,
            runs=state.runs + 1,
        )
        log.info(
            "collector %s: %s in %.2fs, %d new, next run %s",
            name,
            outcome.outcome,
            outcome.duration_s,
            len(outcome.new_items),
            outcome.next_run,
        )
        if outcome.outcome == "ok":
            self._notify(collector, outcome.new_items)

    def _index(self, paths: list[str], name: str) -> None:
        if self.indexer is None:
            return
        try:
            self.indexer.index_files(paths)
        except Exception as exc:  # noqa: BLE001 - the index is a cache: its refresh catches up later
            log.warning("collector %s: indexing its files failed (memory's refresh retries): %s", name, exc)

    def _notify(self, collector: Collector, items: list[CollectorItem]) -> None:
        if self.notify is None or not collector.notify:
            return
        matched = matching_items(collector.notify, items)
        complete = self.complete
        rules = ask_rules(collector.notify) if complete is not None else []
        notices: list[str] = []
        if rules:
            # The cheap rules first; what they did not take goes to the model (collectors/triage.py).
            taken = {id(item) for item in matched}
            local_now = self._now().astimezone(zone(self.timezone))
            for rule in rules:
                rest = [item for item in items if isinstance(item, dict) and id(item) not in taken]
                if rest:
                    assert complete is not None  # rules are only read when there is a model
                    triage = ask_model(
                        complete,
                        rule,
                        rest,
                        collector=collector.name,
                        budget=TriageBudget(self.workspace),
                        now=local_now,
                    )
                    taken |= {id(item) for item in triage.picked}
                    notices += [triage.notice] if triage.notice else []
            matched = [item for item in items if id(item) in taken]  # in the run's order
        for text in ([notify_text(collector.name, matched)] if matched else []) + notices:
            try:
                self.notify(collector.name, text)
            except Exception:  # noqa: BLE001 - a failing push must not fail the run
                log.exception("collector %s: notify callback failed", collector.name)

    # -- scheduling ----------------------------------------------------------

    def due(self) -> list[str]:
        """Names of enabled collectors whose next run is now or past (and not running)."""
        now = self._now()
        names = []
        for collector in self.manager.enabled():
            when = self._planned(collector, now)
            if when <= now and not self.is_running(collector.name):
                names.append(collector.name)
        return names

    def _planned(self, collector: Collector, now: datetime) -> datetime:
        state = load_state(self.workspace, collector.name)
        stored = from_iso(state.next_run)
        if state.last_start is None and stored is None:
            # Never run: interval collectors run at once, cron ones wait for their time.
            first = next_regular_run(
                interval_seconds=collector.interval_seconds,
                cron=collector.cron,
                last_start=None,
                now=now,
                tz_name=self.timezone,
            )
            if collector.cron:
                update_state(self.workspace, collector.name, next_run=to_iso(first))
            return first
        regular = next_regular_run(
            interval_seconds=collector.interval_seconds,
            cron=collector.cron,
            last_start=from_iso(state.last_start) or now,
            now=from_iso(state.last_end) or from_iso(state.last_start) or now,
            tz_name=self.timezone,
        )
        if stored is None:
            return regular
        if state.consecutive_failures == 0 and regular < stored:
            # The schedule was shortened in config since the last run: honour it.
            return regular
        return self._within_one_wait(collector, stored, state.consecutive_failures, now)

    def _within_one_wait(self, collector: Collector, stored: datetime, failures: int, now: datetime) -> datetime:
        """An interval (or a backoff) counts real time: after the wall clock is set back (NTP, a wrong clock put
        right) the next run is at most one wait away, not that wait plus the hour the clock went back. Kept in the
        state, so the plan does not recede with the clock. A cron time stays: its next time may already have run."""
        if collector.cron or collector.interval_seconds is None:
            return stored
        wait = (
            collector.interval_seconds
            if failures == 0
            else backoff_seconds(failures, self.retry_base_seconds, self.max_backoff_seconds)
        )
        latest = now + timedelta(seconds=wait)
        if stored <= latest:
            return stored
        update_state(self.workspace, collector.name, next_run=to_iso(latest))
        return latest

    def tick(self, wait: bool = False) -> list[str]:
        """Start every due collector (each in its own supervisor thread); return their names."""
        started = []
        for name in self.due():
            thread = threading.Thread(
                target=self._supervise, args=(name,), name=f"collector-supervisor-{name}", daemon=True
            )
            thread.start()
            started.append(name)
            with self._lock:
                self._supervisors = [t for t in self._supervisors if t.is_alive()] + [thread]
        if wait:
            self.join()
        return started

    def join(self, timeout: float | None = None) -> None:
        """Wait for supervisor threads started by tick() (a hung run ends at its timeout)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            threads = list(self._supervisors)
        for thread in threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _supervise(self, name: str) -> None:
        try:
            self.run_once(name)
        except Exception:  # noqa: BLE001 - one collector's trouble never stops the loop
            log.exception("collector %s: runner error", name)

    def seconds_until_next(self) -> float:
        """Seconds until the earliest planned run among enabled collectors (capped)."""
        now = self._now()
        soonest = MAX_LOOP_SLEEP
        for collector in self.manager.enabled():
            if self.is_running(collector.name):
                continue
            delta = (self._planned(collector, now) - now).total_seconds()
            soonest = min(soonest, delta)
        return max(MIN_LOOP_SLEEP, soonest)

    def _loop(self, slice_seconds: float | None = None) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
                pause = self.seconds_until_next()
            except Exception:  # noqa: BLE001 - keep scheduling whatever happens
                log.exception("collector runner loop error")
                pause = MAX_LOOP_SLEEP
            deadline = time.monotonic() + pause
            while not self._stop.is_set() and (left := deadline - time.monotonic()) > 0:
                self._stop.wait(left if slice_seconds is None else min(left, slice_seconds))

    def start(self) -> None:
        """Run the scheduler in a background thread (for the bot process); nothing once ``stop`` was called."""
        with self._lifecycle:
            if self._closed or (self._loop_thread is not None and self._loop_thread.is_alive()):
                return
            self._stop.clear()
            thread = threading.Thread(target=self._loop, name="collector-runner", daemon=True)
            thread.start()
            self._loop_thread = thread  # only a started thread: a stop joins it

    def stop(self, timeout: float = 5) -> None:
        """Stop scheduling for good and wait up to ``timeout`` seconds for running collectors."""
        with self._lifecycle:
            self._closed = True
            self._stop.set()
            thread = self._loop_thread
        deadline = time.monotonic() + timeout
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        self.join(max(0.0, deadline - time.monotonic()))

    def run_forever(self) -> None:
        """The scheduler in the calling thread until stop() or Ctrl-C.

        Its pauses are waited in slices of ``CTRL_C_SLICE_SECONDS``: a Ctrl-C the kernel hands to another thread
        of the process (a collector's, the index's) only sets Python's flag, which the main thread reads when its
        wait returns; one wait of the whole pause (up to 30 s) left Ctrl-C unanswered that long."""
        self._stop.clear()
        try:
            self._loop(CTRL_C_SLICE_SECONDS)
        finally:
            self._stop.set()

    def _now(self) -> datetime:
        return as_utc(self.clock())


_UTC = UTC


def _run_then_release(
    collector: Collector, workspace: Workspace, attempt: Attempt, run_lock: RunLock, abandoned: threading.Event
) -> None:
    """The worker's body: the run; a run abandoned at its timeout lets its run lock go when the worker ends."""
    run_in_worker(collector, workspace, attempt)
    if abandoned.is_set():
        run_lock.release()
