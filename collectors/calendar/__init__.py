"""Calendar collector: iCalendar sources (URL or file), recurring events expanded, next N days.

Writes ``collectors/calendar/events.json`` (read by the /now digest) and
``upcoming.md``. File paths outside the workspace are allowed only because the
user configured them explicitly.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import requests

from .events import changes, expand, parse_calendar, sort_key, window
from .render import upcoming_markdown

NAME = "calendar"
BASE = f"collectors/{NAME}"

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
                        "properties": {"url": {"type": "string"}, "path": {"type": "string"}, "name": {"type": "string"}},
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


def register_collector(config: dict) -> dict:
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


def source_list(config: dict) -> list[dict]:
    """Normalise ``sources`` to ``{"url"|"path", "name"}`` dicts."""
    out = []
    for item in config.get("sources") or []:
        if isinstance(item, str):
            key = "url" if item.startswith(("http://", "https://", "webcal://")) else "path"
            out.append({key: item, "name": ""})
        else:
            out.append(dict(item))
    for source in out:
        source["name"] = source.get("name") or Path(source.get("path") or source.get("url", "")).stem or "calendar"
    return out


def read_source(source: dict, timeout: float) -> bytes:
    """The raw ICS bytes of one source; OSError/requests errors name it."""
    if "path" in source:
        return Path(source["path"]).expanduser().read_bytes()
    url = source["url"].replace("webcal://", "https://", 1)
    response = requests.get(url, timeout=(min(timeout, 10.0), timeout), headers={"Accept": "text/calendar, */*;q=0.5"})
    if response.status_code >= 400:
        raise OSError(f"HTTP {response.status_code}")
    return response.content


def collect(workspace, config: dict, now: datetime | None = None) -> dict:
    """Expand every source over the window and write events.json and upcoming.md."""
    tz_name = config.get("timezone") or "UTC"
    tz = ZoneInfo(tz_name)
    now = (now or datetime.now(tz)).astimezone(tz)
    days = int(config.get("days", 14))
    start, end = window(now, days)
    timeout = float(config.get("fetch_timeout_seconds", 20))
    sources = source_list(config)
    events: list[dict] = []
    errors: list[str] = []
    failed_names: set[str] = set()
    for source in sources:
        label = source.get("path") or source.get("url")
        try:
            cal = parse_calendar(read_source(source, timeout), label)
            events.extend(expand(cal, start, end, tz, source["name"]))
        except (OSError, ValueError, requests.RequestException) as exc:
            errors.append(f"calendar {label}: {exc}" if str(label) not in str(exc) else str(exc))
            failed_names.add(source["name"])
    if sources and len(errors) == len(sources):
        raise RuntimeError("every calendar source failed: " + "; ".join(errors))
    previous = workspace.read_json(f"{BASE}/events.json", default=[]) or []
    # A source that failed this run keeps its last known events, so they neither vanish
    # from the digest nor come back as "new" when the source recovers.
    today = start.date().isoformat()
    events.extend(e for e in previous if isinstance(e, dict) and e.get("calendar") in failed_names and str(e.get("end", ""))[:10] >= today)
    events.sort(key=sort_key)
    new_items = changes(previous, events)
    workspace.write_json(f"{BASE}/events.json", events)
    workspace.write_text(f"{BASE}/upcoming.md", upcoming_markdown(events, start, days, tz_name))
    return {"new_items": new_items, "summary": f"{len(events)} events in the next {days} days, {len(new_items)} new or changed", "errors": errors}
