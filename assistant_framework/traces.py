"""Traces: one JSON file per answered message under ``traces/<YYYY-MM-DD>/<id>.json``.

A trace holds every model request of the turn (messages sent, raw response, parsed action,
recovered drift, usage, timings) plus section sizes and recalled memory. Secret config values
are replaced by ``***`` anywhere in the trace before it is written; the oldest traces beyond
``keep`` are deleted.

The agent hands traces to ``write_later``: one background thread redacts, writes and prunes
them, so a turn's reply never waits for the disk. Every read of a ``TraceStore`` first waits
for the queued writes, so within a process a trace is readable as soon as its turn returned.
Traces still queued when the process is killed are lost (they are diagnostics, not data);
``drain`` at shutdown (also registered with ``atexit``) writes the rest on a clean exit.
"""

from __future__ import annotations

import atexit
import bisect
import json
import logging
import math
import re
import secrets as _random
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypedDict, cast

from assistant_framework.background import BackgroundWorker
from assistant_framework.config.env import value_secrets
from assistant_framework.json_types import JsonObject
from assistant_framework.redaction import redact_text
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

TRACES_DIR = "traces"
#: One compact line per answered turn, monthly files; /stats reads these, not the pruned traces.
USAGE_DIR = "state/usage"
_ID_RE = re.compile(r"^(\d{8})T\d{6}\d{6}-[0-9a-f]{6}$")
# Shorter "secrets" (e.g. "x") would shred ordinary text when replaced.
_MIN_SECRET_LEN = 4


class TraceRecord(TypedDict, total=False):
    """One turn's trace, ``traces/<YYYYMMDD>/<id>.json`` (the agent's ``trace_of`` writes it; ``trace show``, the
    web page, ``/stats`` and ``trace replay`` read it). A hand-edited file is read key by key, with defaults."""

    id: str
    conversation: str
    time: str  # ISO, the turn's start
    ok: bool
    runner: str | None
    model: str | None
    chosen_runner: str  # the runner the chat chose with /model
    steered: list[JsonObject]  # messages added to the running turn: round, message_id, text
    rounds: int
    elapsed_s: float
    model_s: float
    usage: dict[str, int]
    section_sizes: dict[str, object]  # per prompt section: its size in chars (and tokens)
    recalled: list[JsonObject]  # memory hits recalled into the turn
    user_text: str
    reply: str
    skill_calls: list[JsonObject]  # the agent's skill-call records
    error: str | None
    job: str  # the scheduled job whose run the turn was
    requests: list[JsonObject]  # each model request: round, messages, runner, model, usage, text, response...


class UsageLine(TypedDict):
    """One turn's line of ``state/usage/<YYYY-MM>.jsonl``: what /stats sums, kept when traces are pruned."""

    time: str
    requests: list[JsonObject]  # model, elapsed_s, usage


class UsageRow(TypedDict):
    """The sums of one day, one model or all (``aggregate_usage``)."""

    turns: int
    requests: int
    model_s: float
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    unreported: int  # requests the server answered without usage (their tokens are not in the sums)


class UsageStats(TypedDict):
    """What /stats shows: per day, per model and the total."""

    by_day: dict[str, UsageRow]
    by_model: dict[str, UsageRow]
    total: UsageRow


def collect_secrets(config: Any, extra: Iterable[str] = ()) -> list[str]:
    """Every secret string of a config, longest first: values under token/api_key/password... keys, and what
    looks secret under any key (a URL's password or ``?api_key=``, a token under ``OPENAI_KEY``: ``value_secrets``)."""
    found: set[str] = {s for s in extra if isinstance(s, str) and len(s) >= _MIN_SECRET_LEN}

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, str(k))
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str):
            found.update(secret for secret in value_secrets(value, key) if len(secret) >= _MIN_SECRET_LEN)

    walk(config, "")
    return sorted(found, key=len, reverse=True)


def redact_secrets(value: Any, secrets: list[str]) -> Any:
    """A copy of a JSON-like value with every secret, and every run of 8+ characters of one, replaced by ``***``."""
    if not secrets:
        return value
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        return {redact_secrets(k, secrets): redact_secrets(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_secrets(v, secrets) for v in value]
    return value


def redact_json_text(text: str, secrets: list[str]) -> str:
    """JSON text with every secret inside its strings (and keys) replaced by ``***``.

    Same result as ``redact_secrets`` before encoding, at the cost of one C-speed replace per
    secret instead of a Python walk over the whole document: JSON escapes character by
    character, so a secret inside a string appears in the text as its own escaped form.
    """
    return redact_text(text, [json.dumps(secret, ensure_ascii=False)[1:-1] for secret in secrets])


def new_trace_id(now: datetime | None = None) -> str:
    """A sortable id: UTC timestamp to the microsecond plus 6 random hex digits."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y%m%dT%H%M%S%f") + "-" + _random.token_hex(3)


def trace_path(trace_id: str) -> str:
    """Workspace-relative file of a trace id; ValueError for an id of another shape."""
    match = _ID_RE.match(trace_id)
    if not match:
        raise ValueError(f"trace id {trace_id!r} is not of the form YYYYMMDDTHHMMSSffffff-xxxxxx")
    day = match.group(1)
    return f"{TRACES_DIR}/{day[:4]}-{day[4:6]}-{day[6:]}/{trace_id}.json"


# The process's one trace writer: a registry set up at import, shared by every TraceStore so
# that any store's reads can wait for writes queued through another.
# Each write waits for the replies in progress (at most a second): a reply goes out before its trace is written.
_WRITER = BackgroundWorker("trace-writer", yield_seconds=1.0)
atexit.register(_WRITER.drain, 10.0)
_READ_WAIT_SECONDS = 10.0


def after_reply(job: Callable[[], object], label: str) -> None:
    """Queue a small write that no reply needs (a display's counts) on the trace writer: it runs once the replies
    in progress are out (at most a second later), in order with the traces, and is drained with them."""
    _WRITER.submit(job, label)


def drain_traces(timeout: float) -> bool:
    """Wait for queued trace writes (at shutdown); False when they did not finish in time."""
    return _WRITER.drain(timeout)


@dataclass
class TraceSummary:
    """One line of ``trace list``."""

    id: str
    time: str
    conversation: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    rounds: int
    ok: bool


class TraceStore:
    """Writes, prunes and reads traces of one workspace."""

    def __init__(self, workspace: Workspace, *, keep: int = 200, secrets: Iterable[str] = ()) -> None:
        self.workspace = workspace
        self.keep = keep
        self.secrets = sorted(set(secrets), key=len, reverse=True)
        self._lock = threading.Lock()
        # Ids this store wrote or found, oldest first; listed from disk once, then kept in memory
        # so pruning costs no directory walk per turn.
        self._known: list[str] | None = None

    def write(self, trace: TraceRecord) -> str:
        """Redact and write a trace (its ``id`` is created when missing), prune; returns the id."""
        trace_id = trace.get("id") or new_trace_id()
        # Compact JSON: the C encoder is ~10x faster than the indented one; `trace show` pretty-prints.
        text = redact_json_text(json.dumps({**trace, "id": trace_id}, ensure_ascii=False, default=str), self.secrets)
        # No fsync (diagnostics): a killed process leaves the old file or the new one, and the journal
        # commits of two fsyncs a turn held up the inbox's own.
        self.workspace.write_text(trace_path(trace_id), text + "\n", durable=False)
        self._record_usage(trace)
        with self._lock:
            known = self._ids_locked()
            if trace_id not in known:
                bisect.insort(known, trace_id)
        self.prune()
        return trace_id

    def _record_usage(self, trace: TraceRecord) -> None:
        """Append the turn's usage to ``state/usage/<YYYY-MM>.jsonl``: /stats outlives trace pruning."""
        time_text = str(trace.get("time") or datetime.now(UTC).isoformat(timespec="seconds"))
        requests = [
            {"model": r.get("model"), "elapsed_s": r.get("elapsed_s"), "usage": r.get("usage") or {}}
            for r in trace.get("requests") or []
        ]
        self.workspace.append_jsonl(f"{USAGE_DIR}/{time_text[:7]}.jsonl", {"time": time_text, "requests": requests})

    def write_later(self, trace: TraceRecord) -> str:
        """Queue a trace for the background writer (redaction, write, prune); returns its id."""
        trace_id = trace.get("id") or new_trace_id()
        record: TraceRecord = {**trace, "id": trace_id}
        _WRITER.submit(lambda: self.write(record), f"trace {trace_id}")
        return trace_id

    def drain(self, timeout: float) -> bool:
        """Wait for queued trace writes; False when they did not finish in time."""
        return _WRITER.drain(timeout)

    def _settled(self) -> None:
        # Reads see every trace queued before them (in this process).
        if not _WRITER.drain(_READ_WAIT_SECONDS):
            log.warning("trace writes still queued after %.0f s; reading without them", _READ_WAIT_SECONDS)

    def _scan(self) -> list[str]:
        names = self.workspace.list(f"{TRACES_DIR}/*/*.json")
        ids = [name.rsplit("/", 1)[-1][: -len(".json")] for name in names]
        return sorted(i for i in ids if _ID_RE.match(i))

    def _ids_locked(self) -> list[str]:
        if self._known is None:
            self._known = self._scan()
        return self._known

    def ids(self) -> list[str]:
        """All trace ids in the workspace, oldest first (read from disk)."""
        self._settled()
        return self._scan()

    def prune(self) -> int:
        """Delete the oldest traces beyond ``keep`` (and emptied day folders); returns how many."""
        if self.keep <= 0:
            return 0
        with self._lock:
            known = self._ids_locked()
            doomed = known[: max(0, len(known) - self.keep)]
            del known[: len(doomed)]
            for trace_id in doomed:
                self.workspace.delete(trace_path(trace_id))
            # The oldest kept trace's day folder is still in use: listing it (a day's traces) after every turn was
            # the prune's main cost. Ids start with their day, YYYYMMDD.
            in_use = known[0][:8] if known else None
            for day in {trace_path(i).rsplit("/", 1)[0] for i in doomed if i[:8] != in_use}:
                if not any(self.workspace.path(day).iterdir()):
                    self.workspace.delete(day)
        return len(doomed)

    def load(self, trace_id: str) -> TraceRecord:
        """One trace; KeyError naming the id when it does not exist, ValueError when its file is damaged."""
        self._settled()
        rel = trace_path(trace_id)
        try:
            data = self.workspace.read_json(rel)
        except UnicodeDecodeError:
            raise ValueError(f"workspace file {rel!r} is not UTF-8") from None
        if data is None and not self.workspace.exists(rel):
            raise KeyError(f"trace {trace_id!r} does not exist")
        if not isinstance(data, dict):
            raise ValueError(f"workspace file {rel!r} is not a trace (not a JSON object)")
        return cast(TraceRecord, data)  # as written; a hand-edited one is read key by key with defaults

    def _readable(self, ids: Iterable[str], damaged: list[str] | None) -> Iterator[tuple[str, TraceRecord]]:
        # A damaged file (cut in half, hand-edited) costs only itself; ``damaged`` collects why.
        for trace_id in ids:
            try:
                yield trace_id, self.load(trace_id)
            except ValueError as exc:
                if damaged is not None:
                    damaged.append(str(exc))

    def find(self, prefix: str) -> str:
        """The trace whose id is or starts with ``prefix``; KeyError when none does or several do (listing them)."""
        matches = [trace_id for trace_id in reversed(self.ids()) if trace_id.startswith(prefix)]
        if prefix in matches:
            return prefix
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise KeyError(f"no trace id starts with {prefix!r}")
        shown = "\n  ".join(matches[:20]) + ("\n  ..." if len(matches) > 20 else "")
        raise KeyError(f"{len(matches)} trace ids start with {prefix!r}; give more of the id:\n  {shown}")

    def last(self, damaged: list[str] | None = None) -> TraceRecord | None:
        """The newest readable trace, or None when there are none (damaged newer ones are named in ``damaged``)."""
        return next((trace for _, trace in self._readable(reversed(self.ids()), damaged)), None)

    def summaries(self, limit: int = 20, damaged: list[str] | None = None) -> list[TraceSummary]:
        """The newest ``limit`` readable traces as list lines, newest first (damaged ones skipped, named in
        ``damaged``)."""
        out: list[TraceSummary] = []
        for trace_id, trace in self._readable(reversed(self.ids()), damaged):
            usage = trace.get("usage") or {}
            out.append(
                TraceSummary(
                    id=trace_id,
                    time=str(trace.get("time", "")),
                    conversation=str(trace.get("conversation", "")),
                    model=str(trace.get("model") or ""),
                    prompt_tokens=usage.get("prompt_tokens"),
                    completion_tokens=usage.get("completion_tokens"),
                    rounds=int(trace.get("rounds") or 0),
                    ok=bool(trace.get("ok", True)),
                )
            )
            if len(out) >= limit:
                break
        return out

    def stats(self, days: int = 30, now: datetime | None = None) -> UsageStats:
        """Totals per day and per model over the last ``days`` days (for /stats)."""
        moment = now or datetime.now(UTC)
        start = moment - timedelta(days=days)
        self._settled()
        ledgers = self.workspace.list(f"{USAGE_DIR}/*.jsonl")
        if ledgers:
            first, last = start.strftime("%Y-%m"), moment.strftime("%Y-%m")
            rows: list[JsonObject] = []
            for rel in ledgers:
                if first <= rel.rsplit("/", 1)[-1][:7] <= last:
                    rows.extend(r for r in self.workspace.read_jsonl(rel) if _after(r.get("time"), start))
            return aggregate_usage(rows)
        # Workspaces from before the usage ledger: the kept traces are all there is.
        since = start.astimezone(UTC).strftime("%Y%m%d")
        return aggregate_usage(trace for _, trace in self._readable((i for i in self.ids() if i[:8] >= since), None))


StatField = Literal["prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens"]
_STAT_FIELDS: tuple[StatField, ...] = ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")


def _after(time_text: object, start: datetime) -> bool:
    try:
        moment = datetime.fromisoformat(str(time_text))
    except ValueError:
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment >= start


def _number(value: object) -> float:
    """A figure of a usage row; 0 for anything that is not a finite number."""
    try:
        number = float(value or 0)  # type: ignore[arg-type]  # anything: what float() refuses is 0
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def _empty_row() -> UsageRow:
    return UsageRow(
        turns=0,
        requests=0,
        model_s=0.0,
        prompt_tokens=0,
        completion_tokens=0,
        cached_tokens=0,
        reasoning_tokens=0,
        unreported=0,
    )


def aggregate_usage(traces: Iterable[Mapping[str, object]]) -> UsageStats:
    """{"by_day": {day: row}, "by_model": {model: row}, "total": row} summed over model requests (pure)."""
    by_day: dict[str, UsageRow] = defaultdict(_empty_row)
    by_model: dict[str, UsageRow] = defaultdict(_empty_row)
    total = _empty_row()
    for trace in traces:
        day = str(trace.get("time", ""))[:10] or "unknown"
        for target in (by_day[day], total):
            target["turns"] += 1
        models_seen: set[str] = set()
        requests = trace.get("requests")
        # A hand-edited ledger line of another shape counts for what it holds, never fails the sum.
        for request in requests if isinstance(requests, list) else []:
            if not isinstance(request, dict):
                continue
            model = str(request.get("model") or "unknown")
            if model not in models_seen:
                by_model[model]["turns"] += 1
                models_seen.add(model)
            usage = value if isinstance(value := request.get("usage"), dict) else {}
            for target in (by_day[day], by_model[model], total):
                target["requests"] += 1
                target["model_s"] += _number(request.get("elapsed_s"))
                # llama.cpp's server reports usage only when not streaming: a turn's other calls then count nothing.
                target["unreported"] += not _number(usage.get("prompt_tokens")) and not _number(
                    usage.get("completion_tokens")
                )
                for f in _STAT_FIELDS:
                    target[f] += int(_number(usage.get(f)))
    return UsageStats(by_day=dict(sorted(by_day.items())), by_model=dict(sorted(by_model.items())), total=total)
