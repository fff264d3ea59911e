"""Stage 1 of a memory search: the index rows that match a query, with their BM25 scores.

The query's content words are OR-ed in one FTS5 MATCH, restricted to the scope. A conversation
scope is a list of rowid ranges (its slot, and slot 0 for owner data); each range scores only
its newest ``newest_cap`` matches, so the cost stays bounded however long a conversation grows.
An unscoped search shares a total budget of scored matches among the slots the same way, newest
first. Also here: the other row lookups the ranking needs (CJK matches, whole conversation-days,
neighbouring turns, the newest rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .day_terms import day_bm25, phrase_words
from .index import MemoryIndex
from .log import safe_conversation_id
from .readers import Row
from .rowkeys import SLOT_BITS, slot_of, slot_range
from .terms import fts_query, or_terms


@dataclass
class Scope:
    """Which rows a search may see."""

    sources: tuple[str, ...] | None = None  # exact names, or 'collector:*' style prefixes
    exclude_sources: tuple[str, ...] = ()
    conversation: str | None = None  # only rows of this conversation ...
    owner_data: bool = False  # ... plus rows that belong to no conversation (notes, facts, ...)
    since: datetime | None = None
    until: datetime | None = None


@dataclass(slots=True)  # two hundred made before every turn's model call
class Candidate:
    """One index row a search considers, with its stage-1 (``bm25``) and final (``score``) scores."""

    id: int
    path: str
    seq: int
    source: str
    ref: str
    time: str | None
    conversation: str | None
    role: str | None
    text: str
    outside: bool = False
    bm25: float = 0.0
    score: float = 0.0


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


def _scope_sql(scope: Scope, conversation: bool = True) -> tuple[str, list[Any]]:
    """SQL filter clauses over ``entries e`` for the scope (``conversation=False``: all but
    the conversation filter, for queries already limited to the conversation's rowids)."""
    clauses: list[str] = []
    params: list[object] = []
    if scope.sources:
        parts = []
        for s in scope.sources:
            if s.endswith("*"):
                parts.append("e.source LIKE ? ESCAPE '\\'")  # a literal prefix: "_" and "%" in a name are no wildcards
                params.append(s[:-1].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
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


_COLUMNS = "e.id, e.path, e.seq, e.source, e.ref, e.time, e.conversation, e.role, e.text, e.outside"
_SCORE = 10  # the column after _COLUMNS in queries that add a score


def _candidate(row: Row) -> Candidate:
    """A Candidate from a row of _COLUMNS followed by its score."""
    return _from_columns(row, bm25=row[_SCORE])


def _from_columns(row: Row, *, bm25: float = 0.0, score: float = 0.0) -> Candidate:
    """A Candidate from a row of _COLUMNS (what follows them is not read)."""
    id_, path, seq, source, ref, time, conversation, role, text, outside = row[:_SCORE]
    return Candidate(id_, path, seq, source, ref, time, conversation, role, text, outside, bm25=bm25, score=score)


def bm25_candidates(
    index: MemoryIndex,
    terms: list[str],
    scope: Scope,
    limit: int,
    date_weight: float = 1.0,
    newest_cap: int = 0,
    unscoped_cap: int = 0,
    owner_cap: int | None = None,
) -> list[Candidate]:
    """Stage 1: the best BM25 matches inside the scope (scores positive, higher is better).

    A conversation scope runs one MATCH per rowid range, so FTS5 visits only those rows;
    BM25 statistics are the whole table's either way, so scores from the ranges compare.
    With ``newest_cap`` > 0 each range scores only its newest ``newest_cap`` matches (rowids
    grow with time inside a slot): FTS5 walks the range newest first and stops there. When a
    range has no more matches than that, the result is the full ranking. The owner data's
    range (slot 0) scores its newest ``owner_cap`` (default: ``newest_cap``). An unscoped search
    without filters scores at most ``unscoped_cap`` matches in all, the newest of each slot
    (``slot_shares``); with fewer matches than that it is the full ranking too.
    """
    if not terms:
        return []
    match = fts_query(terms)
    ranges = scope_ranges(index, scope)
    if ranges is None:
        return _unranged_candidates(index, match, scope, limit, date_weight, unscoped_cap)
    return _ranged_candidates(index, match, scope, ranges, limit, date_weight, newest_cap, owner_cap)


def _unranged_candidates(
    index: MemoryIndex, match: str, scope: Scope, limit: int, date_weight: float, unscoped_cap: int
) -> list[Candidate]:
    """Without conversation ranges: one MATCH over the whole table, filtered by the scope's other conditions
    or else capped to the newest ``unscoped_cap`` matches of each slot."""
    where, params = _scope_sql(scope)
    if where:
        # Filters live in ``entries``: every match is joined, then ranked (not capped: a
        # cap counted before the filter could leave nothing of an old ``until`` window).
        rows = index.query(
            f"SELECT {_COLUMNS}, -bm25(fts, 1.0, ?, 0.0) AS s FROM fts CROSS JOIN entries e ON e.id = fts.rowid "
            f"WHERE fts MATCH ?{where} ORDER BY s DESC, e.id LIMIT ?",
            (date_weight, match, *params, limit),
        )
        return [_candidate(row) for row in rows]
    cap_sql, cap_params = _newest_filter(index, match, unscoped_cap)
    rows = index.query(
        f"SELECT {_COLUMNS}, f.s FROM (SELECT rowid AS id, -bm25(fts, 1.0, ?, 0.0) AS s FROM fts "
        f"WHERE fts MATCH ?{cap_sql} ORDER BY s DESC, id LIMIT ?) f CROSS JOIN entries e ON e.id = f.id",
        (date_weight, match, *cap_params, limit),
    )
    rows.sort(key=lambda row: (-row[_SCORE], row[0]))
    return [_candidate(row) for row in rows]


def _ranged_candidates(
    index: MemoryIndex,
    match: str,
    scope: Scope,
    ranges: list[tuple[int, int]],
    limit: int,
    date_weight: float,
    newest_cap: int,
    owner_cap: int | None,
) -> list[Candidate]:
    """With conversation ranges: one MATCH per rowid range, each scoring its newest matches only."""
    # The ranges already select the conversation's rows (and owner data); other filters remain.
    where, params = _scope_sql(scope, conversation=False)
    owner = newest_cap if owner_cap is None else owner_cap

    def cap(low: int) -> int:
        """The LIMIT of a range's newest matches (-1: none); slot 0, owner data, starts at rowid 0."""
        n = owner if low == 0 else newest_cap
        return n if n > 0 else -1

    if where:
        # CROSS JOIN keeps the FTS cursor outermost: the planner must not probe it row by row.
        # The inner ORDER BY fts.rowid DESC is the FTS cursor's own order, so LIMIT stops it.
        sql = (
            f"SELECT * FROM (SELECT {_COLUMNS}, -bm25(fts, 1.0, ?, 0.0) AS s FROM fts CROSS JOIN entries e "
            f"ON e.id = fts.rowid WHERE fts MATCH ? AND fts.rowid BETWEEN ? AND ?{where} ORDER BY fts.rowid DESC "
            "LIMIT ?) "
            f"ORDER BY s DESC, id LIMIT ?"
        )
    else:
        # Rank inside FTS5 first and join only the winners of all ranges: fetching every
        # match's row costs as much again as scoring it.
        sql = (
            "SELECT id, s FROM (SELECT rowid AS id, -bm25(fts, 1.0, ?, 0.0) AS s FROM fts "
            "WHERE fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?) ORDER BY s DESC, id LIMIT ?"
        )
        # The ranges run at once: most of each query's time is FTS5 counting the terms' rows.
        scored = [
            row
            for rows in index.query_many(
                [(sql, (date_weight, match, low, high, cap(low), limit)) for low, high in ranges]
            )
            for row in rows
        ]
        scored.sort(key=lambda row: -row[1])  # stable: ties keep range order, then id
        return _joined(index, scored[:limit])
    queries = [(sql, (date_weight, match, low, high, *params, cap(low), limit)) for low, high in ranges]
    rows = [row for found in index.query_many(queries) for row in found]
    rows.sort(key=lambda row: -row[_SCORE])
    return [_candidate(row) for row in rows[:limit]]


def _joined(index: MemoryIndex, scored: list[tuple[int, float]]) -> list[Candidate]:
    """Candidates for (rowid, score) pairs, in the given order."""
    if not scored:
        return []
    rows = index.query(
        f"SELECT {_COLUMNS} FROM entries e WHERE e.id IN ({','.join('?' * len(scored))})", tuple(i for i, _ in scored)
    )
    by_id = {row[0]: row for row in rows}
    return [_from_columns(by_id[i], bm25=score) for i, score in scored if i in by_id]


def slot_shares(counts: dict[int, int], budget: int) -> dict[int, int]:
    """How many of its newest matches each slot may score, ``budget`` in all (pure).

    Equal shares; a slot with fewer matches than its share scores them all and leaves the
    rest to the others, so a budget larger than the matches caps nothing.
    """
    shares: dict[int, int] = {}
    left = dict(counts)
    remaining = budget
    while left:
        share = max(1, remaining // len(left))
        small = {slot: n for slot, n in left.items() if n <= share}
        if not small:
            shares.update({slot: share for slot in left})
            break
        for slot, n in small.items():
            shares[slot] = n
            remaining -= n
            del left[slot]
    return shares


def _newest_filter(index: MemoryIndex, match: str, budget: int) -> tuple[str, list[Any]]:
    """SQL (and its parameters) keeping only about ``budget`` matches: each slot's newest.

    One walk counts the matches per slot (no scoring, cheap). A slot with more matches than
    its share keeps the newest rows that should hold its share at the slot's match density
    (rowids grow with time inside a slot), a rowid threshold, so no further walk is needed.
    FTS5 scores a row (``bm25()``, the expensive part) only after this filter passed it.
    """
    if budget <= 0:
        return "", []
    counts: dict[int, int] = dict(
        index.query(f"SELECT rowid >> {SLOT_BITS}, count(*) FROM fts WHERE fts MATCH ? GROUP BY 1", (match,))
    )
    if sum(counts.values()) <= budget:
        return "", []
    cases, params = [], []
    for slot, share in sorted(slot_shares(counts, budget).items()):
        if counts[slot] <= share:
            continue
        low, high = slot_range(slot)
        found = index.query(
            "SELECT (SELECT id FROM entries WHERE id BETWEEN ?1 AND ?2 ORDER BY id LIMIT 1), "
            "(SELECT id FROM entries WHERE id BETWEEN ?1 AND ?2 ORDER BY id DESC LIMIT 1)",
            (low, high),
        )
        first, last = found[0] if found else (None, None)
        if first is None or last is None:
            continue
        window = -(-share * (last - first + 1) // counts[slot])  # rows expected to hold `share` matches
        cases.append("WHEN ? THEN ?")
        params += [slot, last - window + 1]
    if not cases:
        return "", []
    return f" AND rowid >= CASE rowid >> {SLOT_BITS} {' '.join(cases)} ELSE 0 END", params


def cjk_candidates(
    index: MemoryIndex, substrings: list[str], short: list[str], scope: Scope, limit: int
) -> list[Candidate]:
    """Rows whose CJK text contains the query's CJK pieces (trigram index; 1-2 characters by a scan of the CJK rows)."""
    where, params = _scope_sql(scope)
    scores: dict[int, Candidate] = {}
    if substrings:
        rows = index.query(
            f"SELECT {_COLUMNS}, -bm25(cjkfts) AS s FROM cjkfts CROSS JOIN entries e ON e.id = cjkfts.rowid "
            f"WHERE cjkfts MATCH ?{where} ORDER BY s DESC LIMIT ?",
            (or_terms(substrings), *params, limit),
        )
        for row in rows:
            scores[row[0]] = _candidate(row)
    if short:
        # The trigram index cannot look up fewer than 3 characters: scan the CJK rows' text, once for
        # all pieces (a row scores how many of them it holds).
        held = " + ".join(["(instr(e.text, ?) > 0)"] * len(short))
        rows = index.query(
            f"SELECT * FROM (SELECT {_COLUMNS}, {held} AS s FROM cjkfts CROSS JOIN entries e ON e.id = cjkfts.rowid "
            f"WHERE 1=1{where}) WHERE s > 0 ORDER BY s DESC, id DESC LIMIT ?",
            (*short, *params, limit),
        )
        for row in rows:
            found = scores.setdefault(row[0], Candidate(*row[:_SCORE]))
            found.bm25 += row[_SCORE]
    return sorted(scores.values(), key=lambda c: -c.bm25)[:limit]


def merge_candidates(words: list[Candidate], cjk: list[Candidate]) -> list[Candidate]:
    """Word-index and CJK matches together; a row found by both adds its scores."""
    merged = {c.id: c for c in words}
    for c in cjk:
        if c.id in merged:
            merged[c.id].bm25 += c.bm25
        else:
            merged[c.id] = c
    return list(merged.values())


def segment_scores(
    index: MemoryIndex, terms: list[str], candidates: list[Candidate], max_slots: int = 4
) -> dict[str, float]:
    """BM25 of whole conversation-days (segments) for the query, for the candidates' log files.

    Scored from the days' word counts (``day_terms``: FTS5's bm25 of the day as one document, its
    statistics those of all days). The counts are keyed word first and a day's id is in its
    conversation's slot, so each query word's days are read as one range per slot of the
    candidates (one seek per word and day when they span more than ``max_slots`` conversations).
    """
    paths = sorted({c.path for c in candidates if c.source == "conversation"})
    phrases = phrase_words(terms)
    words = sorted({w for phrase in phrases for w in phrase})
    if not words or not paths:
        return {}
    days: dict[int, tuple[str, int]] = {
        row_id: (path, tokens)
        for row_id, path, tokens in index.query(
            f"SELECT id, path, tokens FROM segments WHERE path IN ({','.join('?' * len(paths))})", tuple(paths)
        )
    }
    slots = sorted({slot_of(row_id) for row_id in days})
    read = "SELECT t.seg, t.term, t.tf, d.df, st.days, st.tokens FROM segterms t CROSS JOIN segdf d ON d.term = t.term "
    read += f"CROSS JOIN segstats st WHERE t.term IN ({','.join('?' * len(words))}) AND "
    if len(slots) <= max_slots:
        sql = " UNION ALL ".join([read + "t.seg BETWEEN ? AND ?"] * len(slots))
        params: tuple[Any, ...] = tuple(p for slot in slots for p in (*words, *slot_range(slot)))
    else:
        sql, params = read + f"t.seg IN ({','.join('?' * len(days))})", (*words, *days)
    rows = index.query(sql, params) if days else []
    counts: dict[int, dict[str, int]] = {}
    days_with: dict[str, int] = {}
    for seg, term, tf, df, _, _ in rows:
        if seg in days:  # the slot's other days
            counts.setdefault(seg, {})[term] = tf
            days_with[term] = df
    all_days, all_tokens = (rows[0][4], rows[0][5]) if rows else (0, 0)
    return {
        days[seg][0]: day_bm25(phrases, held, days[seg][1], days_with, all_days, all_tokens)
        for seg, held in counts.items()
    }


def recent_entries(index: MemoryIndex, scope: Scope, limit: int) -> list[Candidate]:
    """The newest rows in scope (for queries that are only a date phrase)."""
    where, params = _scope_sql(scope)
    rows = index.query(
        f"SELECT {_COLUMNS} FROM entries e WHERE 1=1{where} ORDER BY e.ts DESC LIMIT ?", (*params, limit)
    )
    return [_from_columns(row, score=1.0 / (i + 1)) for i, row in enumerate(rows)]


def neighbours(index: MemoryIndex, pairs: set[tuple[str, int]]) -> list[Candidate]:
    """Rows at the given (path, seq) positions, one UNION ALL query per 200 files."""
    by_path: dict[str, list[int]] = {}
    for path, seq in sorted(pairs):
        by_path.setdefault(path, []).append(seq)
    items = list(by_path.items())
    rows: list[Row] = []
    for start in range(0, len(items), 200):  # SQLite allows 500 compound SELECT terms
        parts, params = [], []
        for path, seqs in items[start : start + 200]:
            parts.append(
                f"SELECT {_COLUMNS} FROM entries e WHERE e.path = ? AND e.seq IN ({','.join('?' * len(seqs))})"
            )
            params.extend([path, *seqs])
        rows.extend(index.query(" UNION ALL ".join(parts), tuple(params)))
    return [Candidate(*row) for row in rows]
