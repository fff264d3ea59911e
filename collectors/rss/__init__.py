"""RSS/Atom collector: fetches configured feeds, keeps new entries, writes a daily digest.

Fetching uses ``requests`` (timeouts, ETag/Last-Modified) and parsing uses
``feedparser``. Entries are deduplicated by id across runs through the
collector cursor in ``state/collectors/rss.json``.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from zoneinfo import ZoneInfo

import feedparser
import requests

from assistant_framework.collectors.state import load_cursor, save_cursor

from .render import digest_lines, entry_text

NAME = "rss"
BASE = f"collectors/{NAME}"
SEEN_LIMIT = 2000
USER_AGENT = "assistant-framework-rss/0.1 (+self-hosted)"

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "feeds": {
            "type": "array",
            "items": {
                "oneOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "object",
                        "required": ["url"],
                        "properties": {"url": {"type": "string", "minLength": 1}, "name": {"type": "string"}},
                        "additionalProperties": False,
                    },
                ]
            },
        },
        "fetch_timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
        "max_items_per_feed": {"type": "integer", "minimum": 1},
        "summary_chars": {"type": "integer", "minimum": 0},
    },
    "additionalProperties": False,
}


def register_collector(config: dict) -> dict:
    """The collector registration (see docs/collectors.md)."""
    return {
        "name": NAME,
        "description": "New entries of the user's RSS/Atom feeds, as a daily Markdown digest.",
        "interval_seconds": 1800,
        "generated_files": [f"{BASE}/YYYY-MM-DD.md", f"{BASE}/items.jsonl", f"{BASE}/feeds.json", f"{BASE}/new.json"],
        "file_structure": (
            "YYYY-MM-DD.md: the day's new entries grouped by feed (title, link, short summary); "
            "items.jsonl: one JSON object per entry (id, feed, title, link, published, summary); "
            "feeds.json: per-feed status (last success, last error)."
        ),
        "config_schema": CONFIG_SCHEMA,
        "run": lambda workspace: collect(workspace, config),
    }


def feed_list(config: dict) -> list[dict]:
    """Normalise ``feeds`` entries to ``{"url", "name"}`` dicts."""
    out = []
    for item in config.get("feeds") or []:
        if isinstance(item, str):
            out.append({"url": item, "name": ""})
        else:
            out.append({"url": item["url"], "name": item.get("name") or ""})
    return out


def collect(workspace, config: dict, now: datetime | None = None) -> dict:
    """One run over every feed; per-feed failures are reported, not raised."""
    tz = ZoneInfo(config.get("timezone") or "UTC")
    now = (now or datetime.now(tz)).astimezone(tz)
    cursor = load_cursor(workspace, NAME)
    feeds_cursor: dict = cursor.setdefault("feeds", {})
    status = workspace.read_json(f"{BASE}/feeds.json", default={}) or {}
    new_items: list[dict] = []
    errors: list[str] = []
    feeds = feed_list(config)
    for feed in feeds:
        url = feed["url"]
        state = feeds_cursor.setdefault(url, {})
        try:
            items = fetch_feed(feed, state, config)
        except FeedError as exc:
            errors.append(str(exc))
            status[url] = {**status.get(url, {}), "name": feed["name"] or status.get(url, {}).get("name", ""), "last_error": str(exc), "last_error_at": now.isoformat(timespec="seconds")}
            continue
        seen = set(state.get("seen", []))
        fresh = []
        for item in items:
            if item["id"] not in seen:
                seen.add(item["id"])
                fresh.append(item)
        fresh = fresh[: int(config.get("max_items_per_feed", 50))]
        state["seen"] = (state.get("seen", []) + [item["id"] for item in fresh])[-SEEN_LIMIT:]
        new_items.extend(fresh)
        status[url] = {"name": items[0]["feed"] if items else feed["name"] or status.get(url, {}).get("name", url), "last_ok": now.isoformat(timespec="seconds"), "last_error": None, "new": len(fresh)}
    # Entries are persisted before the cursor, so a crash re-delivers rather than loses.
    for item in new_items:
        workspace.append_jsonl(f"{BASE}/items.jsonl", item)
    if new_items:
        day = now.date().isoformat()
        rel = f"{BASE}/{day}.md"
        existing = workspace.read_text(rel, default=f"# Feeds digest {day}\n")
        workspace.write_text(rel, existing.rstrip("\n") + "\n\n" + "\n".join(digest_lines(new_items, now)) + "\n")
    workspace.write_json(f"{BASE}/feeds.json", status)
    save_cursor(workspace, NAME, cursor)
    if feeds and len(errors) == len(feeds):
        raise RuntimeError("every feed failed: " + "; ".join(errors))
    return {"new_items": new_items, "summary": f"{len(new_items)} new entries from {len(feeds) - len(errors)}/{len(feeds)} feeds", "errors": errors}


class FeedError(Exception):
    """One feed could not be fetched or parsed; the message names its URL."""


def fetch_feed(feed: dict, state: dict, config: dict) -> list[dict]:
    """Entries of one feed (empty when unchanged: 304); updates ETag/Last-Modified in ``state``."""
    url = feed["url"]
    headers = {"User-Agent": USER_AGENT, "Accept": "application/rss+xml, application/atom+xml, application/xml;q=0.9, */*;q=0.5"}
    if state.get("etag"):
        headers["If-None-Match"] = state["etag"]
    if state.get("last_modified"):
        headers["If-Modified-Since"] = state["last_modified"]
    timeout = float(config.get("fetch_timeout_seconds", 20))
    try:
        response = requests.get(url, headers=headers, timeout=(min(timeout, 10.0), timeout))
    except requests.RequestException as exc:
        raise FeedError(f"feed {url}: fetch failed: {type(exc).__name__}: {exc}") from None
    if response.status_code == 304:
        return []
    if response.status_code >= 400:
        raise FeedError(f"feed {url}: HTTP {response.status_code}")
    parsed = feedparser.parse(response.content, response_headers={k.lower(): v for k, v in response.headers.items()})
    if parsed.get("bozo") and not parsed.entries:
        reason = parsed.get("bozo_exception")
        raise FeedError(f"feed {url}: not a valid RSS/Atom feed: {reason}")
    if not parsed.get("version") and not parsed.entries:
        raise FeedError(f"feed {url}: not a valid RSS/Atom feed (no entries, unknown format)")
    state["etag"] = response.headers.get("ETag")
    state["last_modified"] = response.headers.get("Last-Modified")
    name = feed["name"] or parsed.feed.get("title") or url
    chars = int(config.get("summary_chars", 300))
    return [entry_record(entry, name, url, chars) for entry in parsed.entries]


def entry_record(entry, feed_name: str, feed_url: str, summary_chars: int) -> dict:
    """A plain dict for one feed entry, with a stable id."""
    entry_id = entry.get("id") or entry.get("link")
    if not entry_id:
        basis = f"{feed_url}|{entry.get('title', '')}|{entry.get('published', entry.get('updated', ''))}"
        entry_id = "sha1:" + hashlib.sha1(basis.encode("utf-8")).hexdigest()
    return {
        "id": entry_id,
        "feed": feed_name,
        "feed_url": feed_url,
        "title": " ".join(str(entry.get("title") or "(untitled)").split()),
        "link": entry.get("link") or "",
        "published": entry.get("published") or entry.get("updated") or "",
        "summary": entry_text(entry.get("summary") or "", summary_chars),
    }
