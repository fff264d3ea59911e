"""Cheap signals that rank new items before the ``ask`` rule spends its budget on them (collectors/triage.py).

No model: a few words in the item's own text. An item scores above zero ("stands out") when it holds
words of the owner's question (those not in a "not ..." part of it: "(not a newsletter)" counts
nothing) or words that mean trouble or a deadline (``urgent``, ``cancelled``, ``outage``...); words of
a sale (``% off``, ``deal``, ``unsubscribe``...) and the ``bulk`` mark (mailing lists, newsletters,
automated mail) count against it. Items are asked best first, and only items that stand out may
spend the part of the day's budget held in reserve, so a flood of ordinary junk can use up the
ordinary share and never the reserve: an urgent item that follows it is still shown to the model.
A crafted item can of course look urgent; then it costs a question, and the owner is told when
items that stand out go unsorted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from assistant_framework.collectors.spec import CollectorItem

#: The fields whose text is scored (title first), and how much of each.
TEXT_FIELDS = ("title", "subject", "summary", "snippet", "description")
SCORED_CHARS = 600
#: Words (or word starts) that mean trouble, a change of plan or a deadline (matched anywhere in the text).
URGENT_WORDS = (
    "urgent",
    "asap",
    "immediately",
    "emergency",
    "alert",
    "security",
    "breach",
    "outage",
    "cancelled",
    "canceled",
    "cancellation",
    "deadline",
    "overdue",
    "failed",
    "failure",
    "critical",
    "warning",
    "evacuat",
    "recall",
    "action required",
    "hospital",
    "accident",
    "police",
    "earthquake",
    "flood",
    "delay",
    "gate change",
    "fraud",
    "suspicious",
    "stolen",
    "expire",
    "declined",
    "overdrawn",
    "missed call",
    # German, French, Spanish, Italian: the commonest of the same
    "dringend",
    "wichtig",
    "abgesagt",
    "storniert",
    "störung",
    "ausfall",
    "warnung",
    "urgence",
    "annulé",
    "urgente",
    "cancelado",
    "annullato",
)
#: Words of a sale or a mailing.
JUNK_WORDS = (
    "% off",
    "sale",
    "deal",
    "discount",
    "coupon",
    "promo",
    "sponsored",
    "advertis",
    "newsletter",
    "unsubscribe",
    "webinar",
    "giveaway",
    "buy now",
    "limited time",
    "black friday",
)
#: Words of a question that say nothing about an item.
_STOP = frozenset(
    [
        "about",
        "after",
        "also",
        "been",
        "does",
        "from",
        "have",
        "into",
        "just",
        "know",
        "like",
        "more",
        "most",
        "only",
        "other",
        "over",
        "some",
        "such",
        "than",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "what",
        "when",
        "where",
        "which",
        "while",
        "with",
        "would",
        "your",
        "yours",
    ]
)
#: A "not ..." part of the question: up to its closing parenthesis or the end of its clause.
_NEGATED = re.compile(r"\b(?:not|no|never|except|but not)\b[^()?.;]*\)?", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{4,}", re.UNICODE)


def question_words(question: str) -> frozenset[str]:
    """The words of the owner's question that an item can hold (4 letters or more, not in a "not ..." part)."""
    kept = _NEGATED.sub(" ", question)
    return frozenset(word.lower() for word in _WORD.findall(kept)) - _STOP


def item_text(item: CollectorItem) -> str:
    """The item's own text, lower case, as scored."""
    parts = [str(item[key]) for key in TEXT_FIELDS if item.get(key)]
    return " ".join(" ".join(parts).split())[:SCORED_CHARS].lower()


def cheap_score(item: CollectorItem, wanted: frozenset[str]) -> int:
    """Above zero: the item stands out (the question's words, trouble or a deadline); below: junk signals."""
    text = item_text(item)
    words = set(_WORD.findall(text))
    score = sum(1 for word in URGENT_WORDS if word in text)
    score += len(wanted & words)
    score -= sum(1 for word in JUNK_WORDS if word in text)
    score -= 2 if item.get("bulk") else 0
    return score


def ranked(items: Sequence[CollectorItem], question: str) -> tuple[list[CollectorItem], int]:
    """The items best first (ties keep their order), and how many at the front stand out (score above zero)."""
    wanted = question_words(question)
    scored = sorted(((cheap_score(item, wanted), n, item) for n, item in enumerate(items)), key=lambda s: (-s[0], s[1]))
    return [item for _, _, item in scored], sum(1 for score, _, _ in scored if score > 0)
