"""Markdown rendering of new feed entries for the daily digest."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from assistant_framework.html_text import html_to_text
from assistant_framework.redaction import link_without_secrets

if TYPE_CHECKING:
    from .records import FeedEntry

# Tags, comments or character references: markup even where the feed calls the field plain text.
_MARKUP = re.compile(r"<[A-Za-z!/?]|&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
# A link in a text: a summary's (``html_to_text`` writes an anchor's target as ``<https://...>``), a digest's
# (``[title](https://...)``), a JSON string's.
_LINK = re.compile(r"https?://[^\s<>\"'()]+")


def clean_text(value: str, detail: object = None) -> str:
    """A title, author or name as one line of plain text (HTML declared or evident turned into text)."""
    text = str(value or "")
    kind = str(detail.get("type", "")) if isinstance(detail, dict) else ""
    if "html" in kind or _MARKUP.search(text):
        text = html_to_text(text, links=False)
    return " ".join(text.split())


def entry_text(summary: str, limit: int, secrets: Sequence[str] = ()) -> str:
    """A feed summary (often HTML) as one line of plain text, cut at ``limit`` characters; its links without
    their secrets (``link_without_secrets``, ``secrets``: the feed URL's), before the cut can halve one."""
    text = links_without_secrets(" ".join(html_to_text(summary).split()), secrets)
    if limit and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text if limit else ""


def links_without_secrets(text: str, secrets: Sequence[str]) -> str:
    """``text`` with each link in it as ``link_without_secrets`` keeps it (``secrets``: the feed URL's)."""
    return _LINK.sub(lambda link: link_without_secrets(link[0], secrets), text)


def digest_lines(items: Sequence[FeedEntry], now: datetime) -> list[str]:
    """One section per run: a heading with the local time, then entries grouped by feed."""
    lines = [f"## {now.strftime('%H:%M')} ({len(items)} new)"]
    by_feed: dict[str, list[FeedEntry]] = {}
    for item in items:
        by_feed.setdefault(item["feed"], []).append(item)
    for feed, entries in by_feed.items():
        lines.append("")
        lines.append(f"### {feed}")
        for item in entries:
            title = item["title"].replace("[", "(").replace("]", ")")
            lines.append(f"- [{title}]({item['link']})" if item["link"] else f"- {title}")
            if item.get("summary"):
                lines.append(f"  {item['summary']}")
    return lines
