"""Calendar collector: iCalendar sources (URL or file), recurring events expanded, next N days.

Writes ``collectors/calendar/events.json`` (read by the /now digest) and
``upcoming.md``. File paths outside the workspace are allowed only because the
user configured them explicitly.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from pathlib import Path
from typing import cast
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from assistant_framework.collectors.fetch import FetchError, fetch, fetch_all
from assistant_framework.collectors.spec import CollectorConfig, CollectorRegistration, CollectorResult, SourceReport
from assistant_framework.config.env import looks_like_token
from assistant_framework.json_types import JsonObject
from assistant_framework.redaction import redact_text
from assistant_framework.workspace import Workspace

from .bounds import RunBudget
from .events import Expansion, Skipped, changes, expand, parse_calendar, reason_text, sort_key, window
from .records import CalendarEvent, CalendarSource
from .render import upcoming_markdown

NAME = "calendar"
BASE = f"collectors/{NAME}"
SOURCES = f"{BASE}/sources"
#: Warnings about events not listed in full, per source and run (the rest are counted).
MAX_CUT_WARNINGS = 5

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "sources": {
            "type": "array",
            "items": {
                "oneOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "object",
                        "properties": {
                            "url": {"type": "string"},
                            "path": {"type": "string"},
                            "name": {"type": "string"},
                        },
                        "oneOf": [{"required": ["url"]}, {"required": ["path"]}],
                        "additionalProperties": False,
                    },
                ]
            },
        },
        "days": {"type": "integer", "minimum": 1, "maximum": 366},
        "fetch_timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
    },
    "additionalProperties": False,
}


def register_collector(config: CollectorConfig) -> CollectorRegistration:
    """The collector registration (see docs/collectors.md)."""
    return {
        "name": NAME,
        "description": "The user's upcoming calendar events (next days, recurring events expanded).",
        "interval_seconds": 900,
        "generated_files": [f"{BASE}/upcoming.md", f"{BASE}/events.json", f"{BASE}/new.json"],
        "file_structure": (
            "upcoming.md: events grouped by local day; events.json: list of "
            "{uid, summary, start, end, location, all_day, calendar} in the user's timezone, sorted by start."
        ),
        "config_schema": CONFIG_SCHEMA,
        "run": lambda workspace: collect(workspace, config),
    }


def source_list(config: CollectorConfig) -> list[CalendarSource]:
    """Normalise ``sources`` to ``{"url"|"path", "name"}`` dicts with unique names.

    The name keys a source's last known events, so it must be unique: the configured
    name, else the file name plus a hash of the whole URL or path (every Google
    Calendar URL ends in ``basic.ics``).
    """
    out: list[CalendarSource] = []
    for item in config.get("sources") or []:
        if isinstance(item, str):
            key = "url" if item.startswith(("http://", "https://", "webcal://")) else "path"
            out.append(CalendarSource(url=item, name="") if key == "url" else CalendarSource(path=item, name=""))
        else:
            out.append(cast(CalendarSource, dict(item)))  # checked by CONFIG_SCHEMA
    taken: set[str] = set()
    for source in out:
        where = source.get("path") or source.get("url", "")
        stem = Path(where.split("?", 1)[0]).stem if "path" in source else Path(_url_file(where)).stem
        name = source.get("name") or f"{stem or 'calendar'}-{_short_hash(where)}"
        if name in taken:
            name = f"{name}-{_short_hash(where)}"
        taken.add(name)
        source["name"] = name
    return out


def _url_file(url: str) -> str:
    """The file name a URL ends in (``basic.ics``), shown and used for a source's name; "" when its last segment
    is no file name or looks like a token: iCloud's and Nextcloud's shared calendars end in their secret
    (``/published/2/<token>``, ``/public-calendars/<token>?export``), which would be in every file it names."""
    tail = urlsplit(url).path.rsplit("/", 1)[-1]
    stem, dot, _ = tail.rpartition(".")
    return tail if dot and stem and not looks_like_token(stem) else ""


def _drop_token_named_file(workspace: Workspace, source: CalendarSource) -> None:
    """The file an older version kept a URL's source in, named by the URL's last segment (a token, for iCloud
    and Nextcloud): deleted, so the token leaves the workspace and its backups."""
    url = source.get("url")
    if url and not _url_file(url):
        older = f"{Path(url.split('?', 1)[0]).stem or 'calendar'}-{_short_hash(url)}"
        if older != source["name"]:
            workspace.delete(f"{SOURCES}/{_file_name(older)}.json")


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def read_source(source: CalendarSource, timeout: float) -> bytes:
    """The raw ICS bytes of one source; OSError names what went wrong (the caller adds the source)."""
    if "path" in source:
        return Path(source["path"]).expanduser().read_bytes()
    url = source["url"].replace("webcal://", "https://", 1)
    try:
        answer = fetch(url, timeout=timeout, headers={"Accept": "text/calendar, */*;q=0.5"})
    except FetchError as exc:
        # The HTTP library's message may quote the URL: its path and query hold a secret calendar's token.
        parts = urlsplit(url)
        raise OSError(redact_text(str(exc), [s for s in (parts.path, parts.query, parts.password) if s])) from None
    if answer.status >= 400:
        raise OSError(f"HTTP {answer.status}")
    return answer.content


def _label(source: CalendarSource) -> str:
    """How errors name a source: its name and path, or its URL without the query (tokens live there)."""
    if source.get("path"):
        return f"{source['name']} ({source['path']})"
    # Secret calendar URLs carry their token in the path or query: show host and file name only.
    url = urlsplit(str(source.get("url", "")))
    tail = _url_file(str(source.get("url", "")))
    host = url.hostname or ""
    where = f"{host}:{url.port}" if url.port else host  # never the user:password@ of the netloc
    shown = f"{'…/' if url.path.count('/') > 1 else ''}{tail}" if tail else "…"
    return f"{source['name']} ({url.scheme}://{where}/{shown})"


def collect(workspace: Workspace, config: CollectorConfig, now: datetime | None = None) -> CollectorResult:
    """Expand every source over the window and write events.json and upcoming.md.

    Sources are fetched in a small pool; each one's events are saved to
    ``sources/<name>.json`` as soon as they are parsed, so a failing or slow
    source keeps its last known events and costs the others nothing.
    """
    tz_name = config.get("timezone") or "UTC"
    tz = ZoneInfo(tz_name)
    now = (now or datetime.now(tz)).astimezone(tz)
    days = int(config.get("days", 14))
    start, end = window(now, days)
    timeout = float(config.get("fetch_timeout_seconds", 20))
    sources = source_list(config)
    for source in sources:
        _drop_token_named_file(workspace, source)
    previous = workspace.read_json(f"{BASE}/events.json", default=[]) or []
    today = start.date().isoformat()
    events: list[CalendarEvent] = []
    errors: list[str] = []
    report: dict[str, SourceReport] = {}
    failed = skipped_total = 0
    checked: set[str] = set()  # sources read fine, with no broken event: their missing occurrences are gone
    budget = RunBudget()  # occurrences listed by the whole run, all sources together
    cut: set[tuple[str, str]] = set()  # (calendar, uid) of events not listed in full: no change report

    def work(source: CalendarSource) -> Expansion:
        cal = parse_calendar(read_source(source, timeout), _label(source))
        return expand(cal, start, end, tz, source["name"], budget)

    for source, result, error in fetch_all(sources, work):
        name = source["name"]
        if error is not None:
            failed += 1
            message = _failure_message(source, error)
            errors.append(message)
            report[name] = {"ok": False, "error": message}
            events.extend(_last_known(workspace, name, previous, today))
            continue
        assert result is not None  # fetch_all gives a result when there is no error
        found, skipped = result.records, result.skipped
        errors.extend(_source_warnings(source, result))
        cut.update((name, uid) for uid in result.cut_uids)
        skipped_total += len(skipped)
        if not skipped:
            checked.add(name)
        _save_source(workspace, name, found)
        report[name] = {"ok": True, "error": None, "items": len(found), "skipped": _skipped_report(skipped)}
        events.extend(found)
    if sources and failed == len(sources):
        raise RuntimeError("every calendar source failed: " + "; ".join(errors))
    events = sorted(_unique(events), key=sort_key)
    # An event not listed in full (too many occurrences) would report its window's edges as news.
    listed_in_full = [e for e in events if not _in(e, cut)]
    new_items = changes([e for e in previous if not _in(e, cut)], listed_in_full, checked=checked, now=now, until=end)
    workspace.write_json(f"{BASE}/events.json", events)
    workspace.write_text(f"{BASE}/upcoming.md", upcoming_markdown(events, start, days, tz_name))
    summary = f"{len(events)} events in the next {days} days, {len(new_items)} new, changed or cancelled"
    summary += _summary_tail(skipped_total, len(cut), failed, len(sources))
    return {"new_items": new_items, "summary": summary, "errors": errors, "sources": report}


def _failure_message(source: CalendarSource, error: BaseException) -> str:
    """What went wrong with a source, naming it by its label (never a secret URL's token)."""
    if isinstance(error, ValueError) and _label(source) in str(error):
        return str(error)
    return f"calendar {_label(source)}: {reason_text(error)}"


def _source_warnings(source: CalendarSource, result: Expansion) -> list[str]:
    """A source read fine but not whole: its broken events skipped, its events not listed in full (the first
    MAX_CUT_WARNINGS, then how many more)."""
    label = _label(source)
    warnings = [f"calendar {label}: event {bad.uid or '(no UID)'} skipped: {bad.reason}" for bad in result.skipped]
    warnings += [f"calendar {label}: {warning}" for warning in result.cut[:MAX_CUT_WARNINGS]]
    if len(result.cut) > MAX_CUT_WARNINGS:
        warnings.append(f"calendar {label}: {len(result.cut) - MAX_CUT_WARNINGS} more events not listed in full")
    return warnings


def _skipped_report(skipped: list[Skipped]) -> list[dict[str, str]]:
    return [{"uid": b.uid, "reason": b.reason} for b in skipped]


def _summary_tail(skipped: int, cut: int, failed: int, sources: int) -> str:
    """The summary's notes on what the run could not list: broken events, events not in full, failed sources."""
    tail = ""
    if skipped:
        tail += f", {skipped} broken event(s) skipped"
    if cut:
        tail += f", {cut} event(s) not listed in full"
    if failed:
        tail += f", {failed}/{sources} source(s) failed"
    return tail


def _in(event: object, cut: set[tuple[str, str]]) -> bool:
    return isinstance(event, dict) and (event.get("calendar"), event.get("uid")) in cut


def _last_known(workspace: Workspace, name: str, previous: list[JsonObject], today: str) -> list[CalendarEvent]:
    """A failed source's events from its last good run (its own file, else events.json), still current."""
    saved = workspace.read_json(f"{SOURCES}/{_file_name(name)}.json", default=None)
    known = saved.get("events") if isinstance(saved, dict) else None
    known = known if isinstance(known, list) else previous
    # Written by this collector as CalendarEvent records (events.json, sources/<name>.json).
    return [
        cast(CalendarEvent, e)
        for e in known
        if isinstance(e, dict) and e.get("calendar") == name and str(e.get("end", ""))[:10] >= today
    ]


def _save_source(workspace: Workspace, name: str, events: list[CalendarEvent]) -> None:
    """The source's events as last known (rewritten only when they changed)."""
    rel = f"{SOURCES}/{_file_name(name)}.json"
    saved = workspace.read_json(rel, default=None)
    if not (isinstance(saved, dict) and saved.get("events") == events):
        workspace.write_json(rel, {"name": name, "events": events})


def _unique(events: list[CalendarEvent]) -> list[CalendarEvent]:
    seen: set[tuple[str | None, str, str, str]] = set()
    out = []
    for event in events:
        key = (event.get("calendar"), event.get("uid"), event.get("start"), event.get("summary"))
        if key not in seen:
            seen.add(key)
            out.append(event)
    return out


def _file_name(name: str) -> str:
    """A source name as one safe file name segment."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or f"source-{_short_hash(name)}"
