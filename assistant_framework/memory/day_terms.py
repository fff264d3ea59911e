"""A conversation-day's words counted, and the whole-day BM25 scored from those counts.

The day is one BM25 document (what LoCoMo's figures were tuned with), but it is no longer held as one FTS5 row:
rewriting that row after each turn tokenized the whole day twice (its delete and its insert), so a day's turns
cost its length squared. The index keeps instead, per day, each word's count (``segterms``), the day's length in
words (``segments.tokens``), each word's number of days (``segdf``) and the totals (``segstats``); a turn adds
its own words only. ``day_bm25`` is FTS5's ``bm25()`` formula over those counts, so a day scores as it did as one
row. Words are cut by FTS5's own tokenizer (``porter unicode61``, ``scratch_tables``), so the
counts and the query's words are the words FTS5 would see: the index writer's own ``temp`` tables for a day's text
(counted without a row per word in Python), a private in-memory database for a query's words.
"""

from __future__ import annotations

import functools
import math
import sqlite3
import threading
from collections.abc import Mapping

# FTS5's bm25() constants (fts5_aux.c).
_K1 = 1.2
_B = 0.75
_MIN_IDF = 1e-6

_local = threading.local()


def scratch_tables(conn: sqlite3.Connection, schema: str = "main") -> None:
    """A contentless FTS5 table ``words`` cutting text as the index does, and its words' positions (``positions``)
    and counts (``counts``), in ``schema`` of ``conn`` (the index writer's ``temp``, or a private database)."""
    where = "temp, " if schema == "temp" else ""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {schema}.words USING fts5(body, content='', tokenize='porter unicode61')"
    )
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {schema}.positions USING fts5vocab({where}words, 'instance')")
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {schema}.counts USING fts5vocab({where}words, 'row')")


def _scratch() -> sqlite3.Connection:
    """This thread's tokenizing database (recall's reader connections may not write, not even to ``temp``)."""
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        scratch_tables(conn)
        _local.conn = conn
    return conn


def phrase_words(terms: list[str]) -> list[list[str]]:
    """Each query term's words in order, as FTS5 cuts and stems them (a term like ``foo_bar`` is two; ``_``
    none)."""
    return [list(_term_words(t)) for t in terms]


@functools.lru_cache(maxsize=4096)  # recall's words repeat; a miss costs a tokenizing round trip
def _term_words(term: str) -> tuple[str, ...]:
    conn = _scratch()
    try:
        conn.execute("INSERT INTO words (rowid, body) VALUES (1, ?)", (term,))
        return tuple(t for (t,) in conn.execute("SELECT term FROM positions ORDER BY offset"))
    finally:
        conn.execute("INSERT INTO words (words) VALUES ('delete-all')")


def day_bm25(
    phrases: list[list[str]],
    day_counts: Mapping[str, int],
    day_tokens: int,
    days_with: Mapping[str, int],
    days: int,
    total_tokens: int,
) -> float:
    """FTS5's ``-bm25()`` of one day for the OR of ``phrases``, from counts: k1 1.2, b 0.75, each phrase's
    idf ``log((N - n + 0.5) / (n + 0.5))`` (at least 1e-6) over all days. A phrase of several words counts as
    often as its rarest word in the day and in as many days as its rarest word (the counts keep no positions;
    exact for one word, which is what query terms almost always are)."""
    if days <= 0 or total_tokens <= 0:
        return 0.0
    avgdl = total_tokens / days
    score = 0.0
    for words in phrases:
        if not words:
            continue
        tf = min(day_counts.get(w, 0) for w in words)
        if not tf:
            continue
        hit = min(days_with.get(w, 0) for w in words)
        idf = math.log((days - hit + 0.5) / (hit + 0.5))
        if idf <= 0.0:
            idf = _MIN_IDF
        score += idf * (tf * (_K1 + 1.0)) / (tf + _K1 * (1 - _B + _B * day_tokens / avgdl))
    return score
