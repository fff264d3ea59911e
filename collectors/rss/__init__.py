"""RSS/Atom collector: fetches configured feeds, keeps new entries, writes a daily digest.

Fetching uses ``requests`` (timeouts, ETag/Last-Modified) and parsing uses
``feedparser``. Entries are deduplicated by id across runs through the
collector cursor in ``state/collectors/rss.json``. A feed URL's secrets (a token in its query or path, a
password) are fetched with but never written: state, status, items and errors name the feed by the URL without them
(``assistant_framework.redaction.url_key``), so they stay out of the workspace, its backups and the logs. An entry's
link, id and the links in its summary are kept without their own secrets (a ``user:password@``, ``?token=``,
``sig``...) and the feed URL's (a private feed copies its token into its entries' links):
``link_without_secrets``; the ids seen before are read the same way, so an entry seen with its token is not new, and
what an older version stored of the links is rewritten once (``_scrub_older_links``).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping
from datetime import datetime
from urllib.parse import urljoin
from zoneinfo import ZoneInfo

import feedparser

from assistant_framework.collectors.fetch import FetchError, fetch, fetch_all
from assistant_framework.collectors.spec import CollectorConfig, CollectorRegistration, CollectorResult, SourceReport
from assistant_framework.collectors.state import load_cursor, save_cursor
from assistant_framework.json_types import JsonObject
from assistant_framework.redaction import link_without_secrets, redact_text, url_key, url_secrets, url_without_secrets
from assistant_framework.workspace import Workspace

from .records import Feed, FeedCursor, FeedEntry, FeedNotes
from .render import clean_text, digest_lines, entry_text, links_without_secrets

NAME = "rss"
BASE = f"collectors/{NAME}"
SEEN_LIMIT = 2000
#: The cursor's mark that what an older version stored of its entries' links was rewritten without their secrets.
LINKS_CLEAN = "entry_links_clean"
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


def register_collector(config: CollectorConfig) -> CollectorRegistration:
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


def feed_list(config: CollectorConfig) -> list[Feed]:
    """Normalise ``feeds`` entries to ``{"url", "name"}`` dicts."""
    out: list[Feed] = []
    for item in config.get("feeds") or []:
        if isinstance(item, str):
            out.append({"url": item, "name": ""})
        else:
            out.append({"url": item["url"], "name": item.get("name") or ""})
    return out


def collect(workspace: Workspace, config: CollectorConfig, now: datetime | None = None) -> CollectorResult:
    """One run over every feed; per-feed failures are reported, not raised.

    Feeds are fetched in a small pool, each within ``fetch_timeout_seconds`` from connect
    to last byte; each feed's entries, digest lines and cursor are saved as soon as it
    is parsed, so a slow feed never costs the others.
    """
    tz = ZoneInfo(config.get("timezone") or "UTC")
    now = (now or datetime.now(tz)).astimezone(tz)
    cursor = load_cursor(workspace, NAME)
    feeds_cursor: dict[str, FeedCursor] = cursor.setdefault("feeds", {})
    status = workspace.read_json(f"{BASE}/feeds.json", default={}) or {}
    new_items: list[FeedEntry] = []
    errors: list[str] = []
    report: dict[str, SourceReport] = {}
    feeds = feed_list(config)
    order = {url_without_secrets(feed["url"]): index for index, feed in enumerate(feeds)}
    _scrub_older(workspace, cursor, feeds, [*feeds_cursor, *status])  # before today's digest is read: it may be one
    day = now.date().isoformat()
    digest_rel = f"{BASE}/digest/{day}.md"  # for reading; the memory index keeps items.jsonl (one hit per item)
    digest_before = workspace.read_text(digest_rel, default=f"# Feeds digest {day}\n")
    stamp = now.isoformat(timespec="seconds")
    for feed, result, error in fetch_all(feeds, lambda feed: _fetch_one(feed, feeds_cursor, config)):
        url, shown = url_key(feed["url"]), url_without_secrets(feed["url"])
        if url != feed["url"]:  # the whole URL, as an older run keyed it, goes
            feeds_cursor.pop(feed["url"], None)
            status.pop(feed["url"], None)
        if error is not None:
            message = _failure_message(feed, error, shown)
            errors.append(message)
            report[url] = {"ok": False, "error": message}
            status[url] = _failed_status(status.get(url, {}), feed, message, stamp)
            workspace.write_json(f"{BASE}/feeds.json", status)
            continue
        assert result is not None  # fetch_all gives a result when there is no error
        items, state, info = result
        fresh, passed_over = _take_fresh(items, state, int(config.get("max_items_per_feed", 50)))
        # Entries are persisted before the cursor, so a crash re-delivers rather than loses.
        for item in fresh:
            workspace.append_jsonl(f"{BASE}/items.jsonl", item)
        new_items.extend(fresh)
        if fresh:
            new_items.sort(key=lambda i: order.get(i["feed_url"], len(order)))
            workspace.write_text(
                digest_rel, digest_before.rstrip("\n") + "\n\n" + "\n".join(digest_lines(new_items, now)) + "\n"
            )
        feeds_cursor[url] = state
        save_cursor(workspace, NAME, cursor)
        for warning in info.get("warnings", []):
            errors.append(f"feed {shown}: {warning}")
        report[url] = _ok_report(fresh, passed_over, info)
        status[url] = {
            "name": items[0]["feed"] if items else feed["name"] or status.get(url, {}).get("name", shown),
            "last_ok": stamp,
            "last_error": None,
            "new": len(fresh),
            **({"encoding": info["encoding"]} if info.get("encoding") else {}),
        }
        workspace.write_json(f"{BASE}/feeds.json", status)
    return _run_result(new_items, errors, report, len(feeds))


def _scrub_older(workspace: Workspace, cursor: JsonObject, feeds: list[Feed], older_keys: list[str]) -> None:
    """What an older version wrote with secrets: feed URLs whole (``_scrub_older_urls``), entries' links whole
    (``_scrub_older_links``)."""
    _scrub_older_urls(workspace, feeds, older_keys)
    _scrub_older_links(workspace, cursor, feeds)


def _scrub_older_urls(workspace: Workspace, feeds: list[Feed], older_keys: list[str]) -> None:
    """Each feed with a secret whose whole URL keys an older cursor or status: ``_scrub_older_runs``."""
    for feed in feeds:
        if feed["url"] in older_keys and url_key(feed["url"]) != feed["url"]:
            _scrub_older_runs(workspace, feed["url"], url_without_secrets(feed["url"]))


def _scrub_older_runs(workspace: Workspace, url: str, shown: str) -> None:
    """The files an older version wrote the whole URL into (its secret in the path was not known as one): the
    items, the runs and the digests, rewritten with the URL as shown. Once: while its older cursor or status is there;
    under the appends' lock, so a line appended meanwhile is kept."""
    for rel in [f"{BASE}/items.jsonl", f"{BASE}/runs.jsonl", *workspace.list(f"{BASE}/digest/*.md")]:
        with workspace.lock(rel):
            text = workspace.read_text(rel, default="")
            if url in text:
                workspace.write_text(rel, text.replace(url, shown))


def _scrub_older_links(workspace: Workspace, cursor: JsonObject, feeds: list[Feed]) -> None:
    """The entries an older version stored with their links whole (items, digests): each link in them rewritten as
    ``entry_record`` keeps it now. Once: till the cursor is saved with ``LINKS_CLEAN``; under the appends' lock."""
    if cursor.get(LINKS_CLEAN):
        return
    secrets = [one for feed in feeds for one in url_secrets(feed["url"])]
    for rel in [f"{BASE}/items.jsonl", *workspace.list(f"{BASE}/digest/*.md")]:
        with workspace.lock(rel):
            text = workspace.read_text(rel, default="")
            clean = links_without_secrets(text, secrets)
            if clean != text:
                workspace.write_text(rel, clean)
    cursor[LINKS_CLEAN] = True


def _fetch_one(
    feed: Feed, feeds_cursor: dict[str, FeedCursor], config: CollectorConfig
) -> tuple[list[FeedEntry], FeedCursor, FeedNotes]:
    """One feed's entries, its cursor (updated by the fetch) and the fetch's notes."""
    # Keyed by the URL without its secrets; a cursor written before that is keyed by the whole URL.
    state = FeedCursor(**(feeds_cursor.get(url_key(feed["url"])) or feeds_cursor.get(feed["url"]) or {}))
    if state.get("seen"):  # an older version kept an entry's id with its secrets: seen the same without them
        secrets = url_secrets(feed["url"])
        state["seen"] = [link_without_secrets(one, secrets) for one in state["seen"]]
    items, info = fetch_feed(feed, state, config)
    return items, state, info


def _failure_message(feed: Feed, error: BaseException, shown: str) -> str:
    """What went wrong with a feed, naming it without its URL's secrets."""
    message = str(error) if isinstance(error, FeedError) else f"feed {shown}: {type(error).__name__}: {error}"
    return redact_text(message, url_secrets(feed["url"]))


def _take_fresh(items: list[FeedEntry], state: FeedCursor, cap: int) -> tuple[list[FeedEntry], list[str]]:
    """The entries not seen before, at most ``cap`` of them, and the ids of those passed over; both are
    remembered as seen in ``state``."""
    seen = set(state.get("seen", []))
    fresh = []
    for item in items:
        if item["id"] not in seen:
            seen.add(item["id"])
            fresh.append(item)
    # Entries over the cap (the older end of a big feed's first fetch) are passed over for
    # good: remembered as seen before the kept ones, so they never come back later as "new".
    passed_over = [item["id"] for item in fresh[cap:]]
    fresh = fresh[:cap]
    state["seen"] = (state.get("seen", []) + passed_over + [item["id"] for item in fresh])[-SEEN_LIMIT:]
    return fresh, passed_over


def _failed_status(before: JsonObject, feed: Feed, message: str, stamp: str) -> JsonObject:
    """A failed feed's line in feeds.json: what it had, with the error."""
    return {**before, "name": feed["name"] or before.get("name", ""), "last_error": message, "last_error_at": stamp}


def _ok_report(fresh: list[FeedEntry], passed_over: list[str], info: FeedNotes) -> SourceReport:
    return {
        "ok": True,
        "error": None,
        "items": len(fresh),
        **({"passed_over": len(passed_over)} if passed_over else {}),
        **({"warnings": info["warnings"]} if info.get("warnings") else {}),
    }


def _run_result(
    new_items: list[FeedEntry], errors: list[str], report: dict[str, SourceReport], feeds: int
) -> CollectorResult:
    """The run's result; a run where every feed failed is a failed run."""
    failed = sum(1 for r in report.values() if not r["ok"])
    if feeds and failed == feeds:
        raise RuntimeError("every feed failed: " + "; ".join(errors))
    return {
        "new_items": new_items,
        "summary": f"{len(new_items)} new entries from {feeds - failed}/{feeds} feeds",
        "errors": errors,
        "sources": report,
    }


class FeedError(Exception):
    """One feed could not be fetched or parsed; the message names its URL (without its secrets)."""


def fetch_feed(feed: Feed, state: FeedCursor, config: CollectorConfig) -> tuple[list[FeedEntry], FeedNotes]:
    """Entries of one feed (empty when unchanged: 304) and notes (encoding, warnings); updates ETag/Last-Modified
    in ``state``."""
    url, shown = feed["url"], url_without_secrets(feed["url"])
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "application/rss+xml, application/atom+xml, application/xml;q=0.9, */*;q=0.5",
    }
    if etag := state.get("etag"):
        headers["If-None-Match"] = etag
    if last_modified := state.get("last_modified"):
        headers["If-Modified-Since"] = last_modified
    timeout = float(config.get("fetch_timeout_seconds", 20))
    try:
        answer = fetch(url, timeout=timeout, headers=headers)
    except FetchError as exc:
        raise FeedError(f"feed {shown}: {redact_text(str(exc), url_secrets(url))}") from None
    if answer.status == 304:
        return [], {}
    if answer.status >= 400:
        raise FeedError(f"feed {shown}: HTTP {answer.status}")
    # The document URL resolves relative links (feedparser reads it from Content-Location).
    response_headers = {
        **answer.headers,
        "content-location": urljoin(answer.url, answer.headers.get("content-location", "")),
    }
    # A byte stream, never a string: feedparser treats strings as URLs or file paths.
    parsed = feedparser.parse(io.BytesIO(answer.content), response_headers=response_headers)
    if parsed.get("bozo") and not parsed.entries:
        reason = parsed.get("bozo_exception")
        raise FeedError(f"feed {shown}: not a valid RSS/Atom feed: {reason}")
    if not parsed.get("version") and not parsed.entries:
        raise FeedError(f"feed {shown}: not a valid RSS/Atom feed (no entries, unknown format)")
    state["etag"] = answer.headers.get("etag")
    state["last_modified"] = answer.headers.get("last-modified")
    name = feed["name"] or clean_text(parsed.feed.get("title") or "", parsed.feed.get("title_detail")) or shown
    chars = int(config.get("summary_chars", 300))
    base = response_headers["content-location"]
    return [entry_record(entry, name, url, chars, base) for entry in parsed.entries], encoding_notes(
        parsed, answer.headers
    )


def encoding_notes(parsed: feedparser.FeedParserDict, headers: Mapping[str, str]) -> FeedNotes:
    """The encoding feedparser used, and a warning when it had to guess (no declaration, or a wrong one)."""
    encoding = str(parsed.get("encoding") or "")
    warnings = []
    exc = parsed.get("bozo_exception")
    if exc is not None and type(exc).__name__ in ("CharacterEncodingOverride", "CharacterEncodingUnknown"):
        warnings.append(f"encoding not declared or wrong; read as {encoding or 'unknown'}")
    return {"encoding": encoding, "warnings": warnings}


def entry_record(
    entry: feedparser.FeedParserDict, feed_name: str, feed_url: str, summary_chars: int, base_url: str = ""
) -> FeedEntry:
    """A plain dict for one feed entry, with a stable id; every text field is plain text, links absolute and
    without secrets (their own and ``feed_url``'s: ``link_without_secrets``)."""
    secrets = url_secrets(feed_url)
    title = clean_text(entry.get("title") or "", entry.get("title_detail")) or "(untitled)"
    summary_html = entry.get("summary") or ""
    link = entry.get("link") or ""
    if link:
        link = link_without_secrets(urljoin(base_url or feed_url, link), secrets)
    entry_id = link_without_secrets(entry.get("id") or "", secrets) or link
    if not entry_id:
        # No id and no link: title, date and the content together (two posts may share a title and date).
        content = " ".join(c.get("value", "") for c in entry.get("content") or [] if isinstance(c, dict))
        basis = f"{feed_url}|{title}|{entry.get('published') or entry.get('updated') or ''}|{summary_html}|{content}"
        entry_id = "sha1:" + hashlib.sha1(basis.encode("utf-8")).hexdigest()
    author = clean_text(entry.get("author") or "")
    record: FeedEntry = {
        "id": entry_id,
        "feed": feed_name,
        "feed_url": url_without_secrets(feed_url),
        "title": title,
        "link": link,
        "published": entry.get("published") or entry.get("updated") or "",
        "summary": entry_text(summary_html, summary_chars, secrets),
    }
    if author:
        record["author"] = author
    return record
