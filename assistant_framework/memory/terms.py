"""The words of a query a memory search looks up: lower-cased content words, stopwords dropped, at most
``MAX_QUERY_TERMS``, and their FTS5 MATCH expressions (also the skill shortlist's BM25 query, agent/choice.py)."""

from __future__ import annotations

import re

from .cjk import fold_words

STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few
    for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
    himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
    myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those through to too under until up very was wasn't we
    we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's
    with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves s t d ll m re ve
""".split()
)
_TOKEN = re.compile(r"\w+", re.UNICODE)


#: The content words of a query that are looked up (the first ones): each is one more doclist to read.
MAX_QUERY_TERMS = 32


def query_terms(query: str) -> list[str]:
    """Lower-cased content words of a query, stopwords dropped (all words if only stopwords); at most
    MAX_QUERY_TERMS, the first ones."""
    words = [fold_words(w.lower()) for w in _TOKEN.findall(query)]
    kept = [w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    return list(dict.fromkeys(kept or words))[:MAX_QUERY_TERMS]


def or_terms(terms: list[str]) -> str:
    """The quoted terms OR-ed (FTS5 syntax)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def fts_query(terms: list[str]) -> str:
    """An FTS5 MATCH expression OR-ing the quoted terms in the body and date columns."""
    return "{body date}: (" + or_terms(terms) + ")"
