"""Search over the index: BM25 candidates, then a second stage that ranks turns in context.

Stage 1 asks FTS5 for the best BM25 matches (stopwords dropped, terms OR-ed) inside the
filters; a conversation scope scores only the newest ``Ranking.newest_cap`` matches of each
rowid range, so its cost stays bounded however long the conversation grows. Stage 2 (``rerank``, pure) adds two kinds of context a lone turn lacks: how well
its segment (one log file: one conversation-day, or one note) matches the query as a
whole, and how well its neighbouring turns match (answers often sit next to the question
that carries the query's words). Optional embeddings are fused into the stage-1 scores.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

from .index import MemoryIndex
from .rowkeys import slot_of, slot_range
from .log import safe_conversation_id
from .sources import time_to_ts

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


@dataclass
class MemoryHit:
    """One search result, pointing back at a workspace file and line or turn."""

    source: str
    path: str
    ref: str
    time: str | None
    snippet: str
    score: float
    conversation: str | None = None


@dataclass
class Scope:
    """Which rows a search may see."""

    sources: tuple[str, ...] | None = None  # exact names, or 'collector:*' style prefixes
    exclude_sources: tuple[str, ...] = ()
    conversation: str | None = None  # only rows of this conversation ...
    owner_data: bool = False  # ... plus rows that belong to no conversation (notes, facts, ...)
    since: datetime | None = None
    until: datetime | None = None


@dataclass
class Ranking:
    """Stage-2 weights: segment context, neighbour context, semantic fusion."""

    segment_weight: float = 0.5
    neighbour_weight: float = 0.3
    segment_top: int = 3
    semantic_weight: float = 0.0
    candidates: int = 200
    time_weight: float = 0.3
    date_weight: float = 1.0
    whole_segment_weight: float = 0.3
    # Per rowid range of a conversation scope, only the newest N matching rows get a BM25
    # score (FTS5 scores every match before ORDER BY ... LIMIT, ~5 us a row). 0 = score all.
    newest_cap: int = field(default_factory=lambda: NEWEST_CAP)


# Above the longest LoCoMo conversation (680 turns), so that benchmark never hits the cap.
NEWEST_CAP = 1000


@dataclass
class Candidate:
    id: int
    path: str
    seq: int
    source: str
    ref: str
    time: str | None
    conversation: str | None
    role: str | None
    text: str
    bm25: float = 0.0
    score: float = 0.0
    extra: dict = field(default_factory=dict)


def query_terms(query: str) -> list[str]:
    """Lower-cased content words of a query, stopwords dropped (all words if only stopwords)."""
    words = [w.lower() for w in _TOKEN.findall(query)]
    kept = [w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    seen: list[str] = []
    for word in kept or words:
        if word not in seen:
            seen.append(word)
    return seen


def or_terms(terms: list[str]) -> str:
    """The quoted terms OR-ed (FTS5 syntax)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def fts_query(terms: list[str]) -> str:
    """An FTS5 MATCH expression OR-ing the quoted terms in the body and date columns."""
    return "{body date}: (" + or_terms(terms) + ")"


def scope_ranges(index: MemoryIndex, scope: Scope) -> list[tuple[int, int]] | None:
    """The rowid ranges a conversation scope covers (its slot, plus slot 0 for owner data);
    None when the scope names no conversation (every row)."""
    if scope.conversation is None:
        return None
    ranges = []
    slot = index.conversation_slot(safe_conversation_id(scope.conversation))
    if slot is not None:
        ranges.append(slot_range(slot))
    if scope.owner_data:
        ranges.append(slot_range(0))
    return ranges


def _scope_sql(scope: Scope, conversation: bool = True) -> tuple[str, list]:
    """SQL filter clauses over ``entries e`` for the scope (``conversation=False``: all but
    the conversation filter, for queries already limited to the conversation's rowids)."""
    clauses, params = [], []
    if scope.sources:
        parts = []
        for s in scope.sources:
            if s.endswith("*"):
                parts.append("e.source LIKE ?")
                params.append(s[:-1].replace("%", r"\%") + "%")
            else:
                parts.append("e.source = ?")
                params.append(s)
        clauses.append("(" + " OR ".join(parts) + ")")
    for s in scope.exclude_sources:
        clauses.append("e.source != ?")
        params.append(s)
    if conversation and scope.conversation is not None:
        conv = safe_conversation_id(scope.conversation)
        if scope.owner_data:
            clauses.append("(e.conversation = ? OR e.conversation IS NULL)")
        else:
            clauses.append("e.conversation = ?")
        params.append(conv)
    if scope.since is not None:
        clauses.append("e.ts >= ?")
        params.append(scope.since.timestamp())
    if scope.until is not None:
        clauses.append("e.ts < ?")
        params.append(scope.until.timestamp())
    return (" AND " + " AND ".join(clauses)) if clauses else "", params


_COLUMNS = "e.id, e.path, e.seq, e.source, e.ref, e.time, e.conversation, e.role, e.text"


def bm25_candidates(
    index: MemoryIndex, terms: list[str], scope: Scope, limit: int, date_weight: float = 1.0, newest_cap: int = 0
) -> list[Candidate]:
    """Stage 1: the best BM25 matches inside the scope (scores positive, higher is better).

    A conversation scope runs one MATCH per rowid range, so FTS5 visits only those rows;
    BM25 statistics are the whole table's either way, so scores from the ranges compare.
    With ``newest_cap`` > 0 each range scores only its newest ``newest_cap`` matches (rowids
    grow with time inside a slot): FTS5 walks the range newest first and stops there. When a
    range has no more matches than that, the result is the full ranking.
    """
    if not terms:
        return []
    match = fts_query(terms)
    ranges = scope_ranges(index, scope)
    if ranges is None:
        where, params = _scope_sql(scope)
        rows = index.query(
            f"SELECT {_COLUMNS}, -bm25(fts, 1.0, ?, 0.0) AS s FROM fts CROSS JOIN entries e ON e.id = fts.rowid "
            f"WHERE fts MATCH ?{where} ORDER BY s DESC LIMIT ?",
            (date_weight, match, *params, limit),
        )
        return [Candidate(*row[:9], bm25=row[9]) for row in rows]
    # The ranges already select the conversation's rows (and owner data); other filters remain.
    where, params = _scope_sql(scope, conversation=False)
    cap = newest_cap if newest_cap > 0 else -1  # LIMIT -1: no limit
    if where:
        # CROSS JOIN keeps the FTS cursor outermost: the planner must not probe it row by row.
        # The inner ORDER BY fts.rowid DESC is the FTS cursor's own order, so LIMIT stops it.
        sql = (
            f"SELECT * FROM (SELECT {_COLUMNS}, -bm25(fts, 1.0, ?, 0.0) AS s FROM fts CROSS JOIN entries e "
            f"ON e.id = fts.rowid WHERE fts MATCH ? AND fts.rowid BETWEEN ? AND ?{where} ORDER BY fts.rowid DESC LIMIT ?) "
            f"ORDER BY s DESC, id LIMIT ?"
        )
    else:
        # Rank inside FTS5 first and join only the winners: fetching every match's row costs
        # as much again as scoring it.
        sql = (
            f"SELECT {_COLUMNS}, f.s FROM (SELECT id, s FROM (SELECT rowid AS id, -bm25(fts, 1.0, ?, 0.0) AS s FROM fts "
            f"WHERE fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?) ORDER BY s DESC, id LIMIT ?) f "
            f"CROSS JOIN entries e ON e.id = f.id"
        )
    rows = []
    for low, high in ranges:
        rows += index.query(sql, (date_weight, match, low, high, *params, cap, limit))
    rows.sort(key=lambda row: -row[9])
    return [Candidate(*row[:9], bm25=row[9]) for row in rows[:limit]]


def segment_scores(index: MemoryIndex, terms: list[str], candidates: list[Candidate], max_slots: int = 4) -> dict[str, float]:
    """BM25 of whole conversation-days (segments) for the query, for the candidates' log files.

    Segments share their conversation's id slot, so the MATCH is limited to the candidates'
    slots (the whole table only when they span more than ``max_slots`` conversations).
    """
    paths = {c.path for c in candidates if c.source == "conversation"}
    if not terms or not paths:
        return {}
    slots = sorted({slot_of(c.id) for c in candidates if c.source == "conversation"})
    sql = "SELECT s.path, -bm25(segfts) FROM segfts CROSS JOIN segments s ON s.id = segfts.rowid WHERE segfts MATCH ?"
    match = or_terms(terms)
    if len(slots) > max_slots:
        listed = sorted(paths)
        rows = index.query(f"{sql} AND s.path IN ({','.join('?' * len(listed))})", (match, *listed))
    else:
        rows = []
        for slot in slots:
            rows += index.query(f"{sql} AND segfts.rowid BETWEEN ? AND ?", (match, *slot_range(slot)))
    return {path: score for path, score in rows if path in paths}


def recent_entries(index: MemoryIndex, scope: Scope, limit: int) -> list[Candidate]:
    """The newest rows in scope (for queries that are only a date phrase)."""
    where, params = _scope_sql(scope)
    rows = index.query(f"SELECT {_COLUMNS} FROM entries e WHERE 1=1{where} ORDER BY e.ts DESC LIMIT ?", (*params, limit))
    return [Candidate(*row, score=1.0 / (i + 1)) for i, row in enumerate(rows)]


def neighbours(index: MemoryIndex, pairs: set[tuple[str, int]]) -> list[Candidate]:
    """Rows at the given (path, seq) positions, one UNION ALL query per 200 files."""
    by_path: dict[str, list[int]] = {}
    for path, seq in sorted(pairs):
        by_path.setdefault(path, []).append(seq)
    items = list(by_path.items())
    rows: list[tuple] = []
    for start in range(0, len(items), 200):  # SQLite allows 500 compound SELECT terms
        parts, params = [], []
        for path, seqs in items[start : start + 200]:
            parts.append(f"SELECT {_COLUMNS} FROM entries e WHERE e.path = ? AND e.seq IN ({','.join('?' * len(seqs))})")
            params.extend([path, *seqs])
        rows.extend(index.query(" UNION ALL ".join(parts), tuple(params)))
    return [Candidate(*row) for row in rows]


def rerank(
    candidates: list[Candidate],
    extra: list[Candidate],
    ranking: Ranking,
    prefer: tuple[float, float] | None = None,
    segment_bm25: dict[str, float] | None = None,
) -> list[Candidate]:
    """Stage 2: score = own + segment + neighbour context, on the 0..1 scale of the best match.

    Sets ``score`` on the given candidates (fresh objects per search) and returns them ranked.
    ``prefer`` (epoch seconds [start, end)) adds ``time_weight`` to rows dated inside it.
    """
    if not candidates:
        return []
    top = max(c.bm25 for c in candidates) or 1.0
    own = {(c.path, c.seq): c.bm25 / top for c in candidates}
    by_segment: dict[str, list[float]] = {}
    for c in candidates:
        by_segment.setdefault(c.path, []).append(own[(c.path, c.seq)])
    segment = {p: sum(sorted(v, reverse=True)[: ranking.segment_top]) for p, v in by_segment.items()}
    seg_top = max(segment.values()) or 1.0
    whole = segment_bm25 or {}
    whole_top = max(whole.values(), default=0.0) or 1.0
    pool: dict[tuple[str, int], Candidate] = {(c.path, c.seq): c for c in candidates}
    for c in extra:
        pool.setdefault((c.path, c.seq), c)
    ranked = []
    for key, c in pool.items():
        path, seq = key
        neighbour = max(own.get((path, seq - 1), 0.0), own.get((path, seq + 1), 0.0)) if c.source == "conversation" else 0.0
        score = (
            own.get(key, 0.0)
            + ranking.segment_weight * segment.get(path, 0.0) / seg_top
            + ranking.whole_segment_weight * whole.get(path, 0.0) / whole_top
            + ranking.neighbour_weight * neighbour
        )
        if prefer is not None:
            ts = time_to_ts(c.time)
            if ts is not None and prefer[0] <= ts < prefer[1]:
                score += ranking.time_weight
        c.score = score
        ranked.append(c)
    ranked.sort(key=lambda c: (-c.score, c.path, c.seq))
    return ranked


def fuse_semantic(candidates: list[Candidate], similarities: dict[int, float], weight: float) -> None:
    """Mix cosine similarity into BM25 (both scaled to the best candidate) in place."""
    if not candidates or weight <= 0:
        return
    top = max(c.bm25 for c in candidates) or 1.0
    for c in candidates:
        c.bm25 = (1 - weight) * (c.bm25 / top) + weight * max(0.0, similarities.get(c.id, 0.0))


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def snippet(text: str, terms: list[str], width: int = 280) -> str:
    """About ``width`` characters of ``text`` around the first query term."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    positions = [lower.find(t) for t in terms if lower.find(t) >= 0]
    start = max(0, min(positions) - width // 3) if positions else 0
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def search(
    index: MemoryIndex,
    query: str,
    scope: Scope,
    limit: int = 10,
    ranking: Ranking | None = None,
    similarity: Callable[[str, list[Candidate]], dict[int, float]] | None = None,
    prefer: tuple[datetime, datetime] | None = None,
) -> list[MemoryHit]:
    """Ranked hits for ``query`` inside ``scope``; rows dated within ``prefer`` rank higher."""
    ranking = ranking or Ranking()
    terms = query_terms(query)
    if not terms:
        found = recent_entries(index, scope, limit) if (scope.since or scope.until) else []
    else:
        candidates = bm25_candidates(
            index, terms, scope, max(ranking.candidates, limit * 5), ranking.date_weight, ranking.newest_cap
        )
        if similarity is not None and ranking.semantic_weight > 0 and candidates:
            fuse_semantic(candidates, similarity(query, candidates), ranking.semantic_weight)
        head = sorted(candidates, key=lambda c: -c.bm25)[: max(limit * 2, 20)]
        wanted = {(c.path, c.seq + d) for c in head if c.source == "conversation" for d in (-1, 1)}
        wanted -= {(c.path, c.seq) for c in candidates}
        extra = [c for c in neighbours(index, wanted) if _in_scope(c, scope)] if ranking.neighbour_weight else []
        window = (prefer[0].timestamp(), prefer[1].timestamp()) if prefer else None
        whole = None
        if ranking.whole_segment_weight:
            whole = segment_scores(index, terms, candidates)
        found = rerank(candidates, extra, ranking, window, whole)
    return [
        MemoryHit(
            source=c.source, path=c.path, ref=c.ref, time=c.time, snippet=snippet(c.text, terms),
            score=round(c.score, 4), conversation=c.conversation,
        )
        for c in found[:limit]
    ]


def _in_scope(c: Candidate, scope: Scope) -> bool:
    # Neighbours share the file (same conversation), so only the time window can exclude them.
    ts = time_to_ts(c.time)
    if scope.since is not None and (ts is None or ts < scope.since.timestamp()):
        return False
    if scope.until is not None and (ts is None or ts >= scope.until.timestamp()):
        return False
    return True
