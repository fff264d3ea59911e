"""The RSS collector's records: JSON on disk (``items.jsonl``, ``feeds.json``, its cursor) and in between."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class Feed(TypedDict):
    """One configured feed (``feeds``: a URL, or ``{"url", "name"}``)."""

    url: str
    name: str


class FeedEntry(TypedDict):
    """One entry: a line of ``collectors/rss/items.jsonl`` and an item of the run's ``new_items``."""

    id: str
    feed: str
    feed_url: str  # without its secrets
    title: str
    link: str
    published: str
    summary: str
    author: NotRequired[str]


class FeedCursor(TypedDict, total=False):
    """One feed's part of the collector's cursor (``cursor["feeds"][url]``)."""

    etag: str | None
    last_modified: str | None
    seen: list[str]


class FeedNotes(TypedDict, total=False):
    """What a fetch noticed: the encoding feedparser used and warnings (a guessed encoding)."""

    encoding: str
    warnings: list[str]
