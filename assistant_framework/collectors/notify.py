"""Notify rules: pick new items worth a push message, without a model call.

A rule is ``{"match": "sender"|"keyword"|"feed", "value": "..."}``; matching
is a case-insensitive substring test on the item's fields. No rules, no pushes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from assistant_framework.collectors.spec import CollectorItem, NotifyRule

MAX_LISTED = 5

_FIELDS = {
    "sender": ("from", "sender"),
    "keyword": ("title", "subject", "summary", "snippet"),
    "feed": ("feed", "feed_url"),
}


def item_matches(rule: NotifyRule, item: CollectorItem) -> bool:
    """True when one rule matches one item."""
    needle = str(rule.get("value") or "").casefold()
    keys = _FIELDS.get(str(rule.get("match")))
    if not needle or not keys:
        return False
    return any(needle in str(item.get(key) or "").casefold() for key in keys)


def matching_items(rules: Iterable[NotifyRule], items: Iterable[CollectorItem]) -> list[CollectorItem]:
    """New items matched by any rule, in their original order."""
    rules = list(rules)
    if not rules:
        return []
    return [item for item in items if isinstance(item, Mapping) and any(item_matches(r, item) for r in rules)]


def item_title(item: CollectorItem) -> str:
    for key in ("title", "subject", "summary"):
        if item.get(key):
            return " ".join(str(item[key]).split())
    return "(untitled)"


def notify_text(collector_name: str, items: Sequence[CollectorItem]) -> str:
    """One short push message for the matched items of a run."""
    lines = [f"{collector_name}: {len(items)} new matching item{'s' if len(items) != 1 else ''}"]
    for item in items[:MAX_LISTED]:
        origin = item.get("from") or item.get("feed") or ""
        lines.append(f"- {item_title(item)}" + (f" ({origin})" if origin else ""))
    if len(items) > MAX_LISTED:
        lines.append(f"... and {len(items) - MAX_LISTED} more")
    return "\n".join(lines)
