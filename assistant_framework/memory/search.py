"""Search over the index: BM25 candidates, then a second stage that ranks turns in context.

Stage 1 (``candidates.py``) asks FTS5 for the best BM25 matches (stopwords dropped, terms
OR-ed) inside the filters, scoring only the newest matches of each conversation when there
are many. Stage 2 (``rerank``, pure) adds two kinds of context a lone turn lacks: how well
its segment (one log file: one conversation-day, or one note) matches the query as a
whole, and how well its neighbouring turns match (answers often sit next to the question
that carries the query's words). Optional embeddings are fused into the stage-1 scores.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from ..config.settings import RankingSettings
from .candidates import (
    Candidate,
    Scope,
    bm25_candidates,
    cjk_candidates,
    merge_candidates,
    neighbours,
    recent_entries,
    segment_scores,
)
from .cjk import cjk_pieces
from .index import MemoryIndex
from .readers import QueryTimeout, time_limit
from .sources import time_to_ts
from .terms import query_terms

log = logging.getLogger(__name__)

__all__ = ["Candidate", "Hits", "MemoryHit", "Scope", "bm25_candidates", "query_terms", "search"]


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
    outside: bool = False  # a turn logged ``untrusted``: its text came from outside


# A search's index queries, all together (recall runs before every answer).
MAX_SEARCH_SECONDS = 2.0
# Only the start of a longer query is read (a pasted page is no search).
MAX_QUERY_CHARS = 1000


class Hits(list[MemoryHit]):
    """A search's hits, best first; ``partial`` when the time limit cut the index queries short."""

    partial: bool = False


def rerank(
    candidates: list[Candidate],
    extra: list[Candidate],
    ranking: RankingSettings,
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
    # Per row of the pool, before every turn's model call: the settings and lookups are taken once.
    own_of, segment_of, whole_of = own.get, segment.get, whole.get
    segment_weight, whole_weight, neighbour_weight = (
        ranking.segment_weight,
        ranking.whole_segment_weight,
        ranking.neighbour_weight,
    )
    ranked = []
    for key, c in pool.items():
        path, seq = key
        neighbour = 0.0
        if c.source == "conversation":
            before, after = own_of((path, seq - 1), 0.0), own_of((path, seq + 1), 0.0)
            neighbour = after if after > before else before  # max(): the first of equals
        score = (
            own_of(key, 0.0)
            + segment_weight * segment_of(path, 0.0) / seg_top
            + whole_weight * whole_of(path, 0.0) / whole_top
            + neighbour_weight * neighbour
        )
        if prefer is not None:
            ts = time_to_ts(c.time)
            if ts is not None and prefer[0] <= ts < prefer[1]:
                score += ranking.time_weight
        c.score = score
        ranked.append(c)
    ranked.sort(key=_rank_key)
    return ranked


def _rank_key(c: Candidate) -> tuple[float, str, int]:
    return (-c.score, c.path, c.seq)


def fuse_semantic(candidates: list[Candidate], similarities: dict[int, float], weight: float) -> None:
    """Mix cosine similarity into BM25 (both scaled to the best candidate) in place."""
    if not candidates or weight <= 0:
        return
    top = max(c.bm25 for c in candidates) or 1.0
    for c in candidates:
        c.bm25 = (1 - weight) * (c.bm25 / top) + weight * max(0.0, similarities.get(c.id, 0.0))


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
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


T = TypeVar("T")


class Bounded(Protocol):
    """Runs an index query; its ``empty`` when the search's time is up."""

    def __call__(self, work: Callable[[], T], empty: T) -> T: ...


def _word_and_cjk_candidates(
    index: MemoryIndex,
    terms: list[str],
    cjk: tuple[list[str], list[str]],
    scope: Scope,
    want: int,
    ranking: RankingSettings,
    bounded: Bounded,
) -> list[Candidate]:
    """The rows the query's words find (BM25, dated and capped by ``ranking``), merged with those its CJK
    pieces (substrings, short pieces) find."""
    candidates: list[Candidate] = bounded(
        lambda: bm25_candidates(
            index,
            terms,
            scope,
            want,
            ranking.date_weight,
            ranking.newest_cap,
            ranking.unscoped_cap,
            ranking.owner_cap,
        ),
        [],
    )
    substrings, short = cjk
    if substrings or short:
        found = bounded(lambda: cjk_candidates(index, substrings, short, scope, want), list[Candidate]())
        candidates = merge_candidates(candidates, found)
    return candidates


def _neighbour_rows(
    index: MemoryIndex, candidates: list[Candidate], scope: Scope, limit: int, bounded: Bounded
) -> list[Candidate]:
    """The conversation turns just before and after the best candidates, not candidates themselves, within
    ``scope``: a hit's context ranks it (``ranking.neighbour_weight``)."""
    head = sorted(candidates, key=lambda c: -c.bm25)[: max(limit * 2, 20)]
    wanted = {(c.path, c.seq + d) for c in head if c.source == "conversation" for d in (-1, 1)}
    wanted -= {(c.path, c.seq) for c in candidates}
    return [c for c in bounded(lambda: neighbours(index, wanted), list[Candidate]()) if _in_scope(c, scope)]


def _hit(c: Candidate, terms: list[str]) -> MemoryHit:
    return MemoryHit(
        source=c.source,
        path=c.path,
        ref=c.ref,
        time=c.time,
        snippet=snippet(c.text, terms),
        score=round(c.score, 4),
        conversation=c.conversation,
        outside=bool(c.outside),
    )


def search(
    index: MemoryIndex,
    query: str,
    scope: Scope,
    limit: int = 10,
    ranking: RankingSettings | None = None,
    similarity: Callable[[str, list[Candidate]], dict[int, float]] | None = None,
    prefer: tuple[datetime, datetime] | None = None,
    *,
    semantic_weight: float = 0.0,
    time_limit_seconds: float = MAX_SEARCH_SECONDS,
) -> Hits:
    """Ranked hits for ``query`` inside ``scope``; rows dated within ``prefer`` rank higher.

    ``ranking`` is ``memory.ranking`` (its weights and caps; docs/memory.md), ``semantic_weight``
    ``memory.semantic_weight`` (with ``similarity``). Bounded: the query's first MAX_QUERY_CHARS
    characters, its first MAX_QUERY_TERMS words and CJK pieces, and ``time_limit_seconds`` for the
    index queries (a stage cut short counts as finding nothing more; the hits are ``partial``)."""
    ranking = ranking or RankingSettings()
    query = query[:MAX_QUERY_CHARS]
    terms = query_terms(query)
    substrings, short = cjk_pieces(query)
    out = Hits()

    def bounded(work: Callable[[], T], empty: T) -> T:
        try:
            return work()
        except QueryTimeout:
            out.partial = True
            return empty

    with time_limit(time_limit_seconds):
        if not terms and not substrings and not short:
            dated = scope.since or scope.until
            found = bounded(lambda: recent_entries(index, scope, limit), list[Candidate]()) if dated else []
        else:
            want = max(ranking.candidates, limit * 5)
            candidates = _word_and_cjk_candidates(index, terms, (substrings, short), scope, want, ranking, bounded)
            terms = terms + substrings + short
            if similarity is not None and semantic_weight > 0 and candidates:
                fuse_semantic(candidates, similarity(query, candidates), semantic_weight)
            extra = []
            if ranking.neighbour_weight:
                extra = _neighbour_rows(index, candidates, scope, limit, bounded)
            window = (prefer[0].timestamp(), prefer[1].timestamp()) if prefer else None
            whole = None
            if ranking.whole_segment_weight:
                whole = bounded(lambda: segment_scores(index, terms, candidates), None)
            found = rerank(candidates, extra, ranking, window, whole)
    out.extend(_hit(c, terms) for c in found[:limit])
    if out.partial:
        log.warning(
            "memory search stopped after %g s (%d words, %d CJK pieces): the hits may be incomplete",
            time_limit_seconds,
            len(terms),
            len(substrings) + len(short),
        )
    return out


def _in_scope(c: Candidate, scope: Scope) -> bool:
    # Neighbours share the file (same conversation), so only the time window can exclude them.
    ts = time_to_ts(c.time)
    if scope.since is not None and (ts is None or ts < scope.since.timestamp()):
        return False
    return not (scope.until is not None and (ts is None or ts >= scope.until.timestamp()))
