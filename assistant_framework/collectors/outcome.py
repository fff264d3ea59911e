"""One collector run in its worker thread: what ``run`` returned, read into a ``RunOutcome``, and the files
the run wrote and removed under ``collectors/<name>/``. Scheduling and recording the run are ``runner.py``'s."""

from __future__ import annotations

import threading
import traceback
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, cast

from assistant_framework.collectors.spec import CollectorItem, SourceReport
from assistant_framework.json_types import JsonObject
from assistant_framework.workspace import LogCap, Workspace

if TYPE_CHECKING:
    from assistant_framework.collectors.loader import Collector

#: The runner's own files inside ``collectors/<name>/`` (not counted as "written").
NEW_FILE = "new.json"
RUNS_FILE = "runs.jsonl"
#: A run log is cut to its newest lines past this size: a collector every 10 minutes wrote 11 MB a year, all of it
#: read for the last line by the page's Collectors view (1.2 s after a year) and kept in the memory index.
RUNS_CAP = LogCap(max_bytes=2 * 1024 * 1024, keep_lines=5000)
MAX_ERROR_CHARS = 500


@dataclass
class RunOutcome:
    """What one run did: outcome, timing, files written and new items."""

    name: str
    outcome: str  # "ok" | "error" | "timeout" | "skipped"
    started: str | None = None
    duration_s: float = 0.0
    error: str | None = None
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # files the run deleted
    new_items: list[CollectorItem] = field(default_factory=list)
    summary: str = ""
    errors: list[str] = field(default_factory=list)
    next_run: str | None = None
    sources: dict[str, SourceReport] = field(default_factory=dict)  # per-source results the collector reported


@dataclass
class Attempt:
    """One run in its worker thread: set when it finished, with what ``run`` returned or why it failed."""

    result: object = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)


def run_in_worker(collector: Collector, workspace: Workspace, attempt: Attempt) -> None:
    """The worker thread's body: run the collector, keep what it returned or why it failed."""
    try:
        attempt.result = collector.run(workspace)
    except BaseException as exc:  # noqa: BLE001 - report, never propagate out of the worker
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        attempt.error = f"collector {collector.name!r} raised {detail[:MAX_ERROR_CHARS]}"
    finally:
        attempt.done.set()


#: The keys of a collector's result and the types they must have (each may be absent).
_RESULT_TYPES: dict[str, tuple[type, ...]] = {"new_items": (list, tuple), "errors": (list, tuple), "sources": (dict,)}


def apply_result(outcome: RunOutcome, result: object) -> None:
    """Take over what ``run`` returned; a key of the wrong type makes the run an error naming it."""
    if not isinstance(result, dict):
        return
    for key, kinds in _RESULT_TYPES.items():
        value = result.get(key)
        if value is not None and not isinstance(value, kinds):
            outcome.outcome = "error"
            outcome.error = (
                f"collector {outcome.name!r} returned {key!r} as {type(value).__name__}, expected a "
                f"{kinds[0].__name__} (see 'Writing a collector' in docs/collectors.md)"
            )
            return
    items = result.get("new_items") or []
    outcome.new_items = [item for item in items if isinstance(item, dict)]
    outcome.summary = str(result.get("summary") or "")
    outcome.errors = [str(e)[:MAX_ERROR_CHARS] for e in (result.get("errors") or [])]
    sources = result.get("sources")
    if isinstance(sources, dict):
        # As the collector wrote them: merge_sources reads each key with a default.
        outcome.sources = {str(k): cast(SourceReport, v) for k, v in sources.items() if isinstance(v, dict)}


def outcome_dict(outcome: RunOutcome) -> JsonObject:
    """The run as JSON (the web page's ``POST /api/collectors/<name>/run`` answer)."""
    return asdict(outcome)


def snapshot(workspace: Workspace, name: str) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every file under ``collectors/<name>/`` but the runner's own."""
    out: dict[str, tuple[int, int]] = {}
    for rel in workspace.list(f"collectors/{name}/**/*"):
        if rel.rsplit("/", 1)[-1] in (NEW_FILE, RUNS_FILE) and rel.count("/") == 2:
            continue
        try:
            st = workspace.path(rel).stat()
        except OSError:
            continue
        out[rel] = (st.st_mtime_ns, st.st_size)
    return out


def changed_files(workspace: Workspace, name: str, before: dict[str, tuple[int, int]]) -> tuple[list[str], list[str]]:
    """The files written (new or changed) and removed since ``before``."""
    after = snapshot(workspace, name)
    return sorted(rel for rel, sig in after.items() if before.get(rel) != sig), sorted(before.keys() - after)
