"""The whole-day BM25 from each conversation-day's word counts (``memory/day_terms.py``): a turn indexes its own
words only, however long its day has grown, and the days score as FTS5 scored each as one document."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.memory import MemoryService
from assistant_framework.memory.candidates import bm25_candidates, segment_scores
from assistant_framework.memory.cjk import fold_words
from assistant_framework.memory.search import Scope, query_terms
from assistant_framework.workspace import Workspace

UTC = timezone.utc
DAY = datetime(2026, 6, 3, 6, tzinfo=UTC)
FILLER = "we talked about the weather, the traffic on the ring road and what to cook for dinner tonight, nothing else"


def _service(tmp_path) -> MemoryService:
    return MemoryService(Workspace(tmp_path / "ws"), {"runtime": {"timezone": "UTC"}}, start_worker=False)


def _fts5_whole_days(svc: MemoryService, terms: list[str]) -> dict[str, float]:
    """The oracle: each conversation-day's whole text as one row of a real FTS5 table, scored by FTS5's bm25."""
    days = svc.index.query("SELECT path FROM segments")
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE days USING fts5(body, tokenize='porter unicode61')")
        for i, (path,) in enumerate(days, 1):
            texts = svc.index.query("SELECT text FROM entries WHERE path=? ORDER BY seq", (path,))
            conn.execute(
                "INSERT INTO days (rowid, body) VALUES (?, ?)", (i, fold_words("\n".join(t for (t,) in texts)))
            )
        match = " OR ".join(f'"{t}"' for t in terms)
        rows = conn.execute("SELECT rowid, -bm25(days) FROM days WHERE days MATCH ?", (match,)).fetchall()
    finally:
        conn.close()
    return {days[rowid - 1][0]: score for rowid, score in rows}


def test_whole_day_scores_are_fts5s_bm25_of_the_day_as_one_document(tmp_path):
    svc = _service(tmp_path)
    try:
        lines = [
            ("alice", "user", "The running club meets at the Straße corner; runners bring lemons"),
            ("alice", "assistant", "Noted: run club, lemons, Saturday"),
            ("alice", "user", "東京都 trip in May, the lemon tree stays with the neighbours"),
            ("bob", "user", "Bob ran a marathon and ate a lemon"),
            ("bob", "user", FILLER),
            ("carol", "user", "nothing about fruit at all, only ring roads and the weather"),
        ]
        for day in range(3):
            for n, (who, role, text) in enumerate(lines):
                svc.log_turn(who, role, f"{text} {day}" * (day + 1), time=DAY + timedelta(days=day, minutes=n))
        svc.index_pending()
        for query in ("running lemons", "lemon Strasse weather", "東京都 marathon", "ring road", "kiwi"):
            terms = query_terms(query)
            found = bm25_candidates(svc.index, terms, Scope(), 200)
            ours = segment_scores(svc.index, terms, found)
            oracle = _fts5_whole_days(svc, terms)
            candidate_days = {c.path for c in found if c.source == "conversation"}
            assert ours == pytest.approx({p: s for p, s in oracle.items() if p in candidate_days}, rel=1e-9), query
            assert bool(ours) == (query != "kiwi")
        # A day removed (its file re-read empty) leaves the statistics as if it had never been.
        rel = svc.index.query("SELECT path FROM segments WHERE conversation='bob' ORDER BY path LIMIT 1")[0][0]
        svc.workspace.write_text(rel, "")
        svc.refresh()
        terms = query_terms("lemon marathon")
        found = bm25_candidates(svc.index, terms, Scope(), 200)
        assert rel not in {c.path for c in found}
        oracle = _fts5_whole_days(svc, terms)
        assert segment_scores(svc.index, terms, found) == pytest.approx(
            {p: s for p, s in oracle.items() if p in {c.path for c in found}}, rel=1e-9
        )
        # The turns' rows purged before their days (the next refresh reads the files again): the days' counts
        # are found without them, and the statistics are whole again.
        svc.index.purge_source("conversation")
        svc.refresh()
        found = bm25_candidates(svc.index, terms, Scope(), 200)
        assert segment_scores(svc.index, terms, found) == pytest.approx(
            {p: s for p, s in _fts5_whole_days(svc, terms).items() if p in {c.path for c in found}}, rel=1e-9
        )
        assert svc.index.query("SELECT days, tokens FROM segstats") == svc.index.query(
            "SELECT count(*), sum(tokens) FROM segments"
        )
        assert svc.index.query("SELECT count(*) FROM segdf") == svc.index.query(
            "SELECT count(DISTINCT term) FROM segterms"
        )
    finally:
        svc.close()


def test_each_turn_of_a_long_day_indexes_its_own_words_only(tmp_path):
    """The work a turn's indexing does does not grow with its day: the text given to the tokenizer for the day's
    counts is the turn's own, and the statements the index writer runs are as long early in the day as late."""
    svc = _service(tmp_path)
    try:
        statements: list[str] = []
        svc.index.conn.set_trace_callback(statements.append)
        per_turn: list[tuple[int, int, int]] = []
        for n in range(400):  # about 45 kB of the day's text
            text = f"turn {n}: {FILLER}"
            statements.clear()
            svc.log_turn("alice", "user" if n % 2 else "assistant", text, time=DAY + timedelta(minutes=n))
            cut = [s for s in statements if s.startswith("INSERT INTO temp.words (rowid, body)")]
            assert cut  # the day's counts were made through the tokenizer the test sees
            per_turn.append((len(text), sum(len(s) for s in cut), sum(len(s) for s in statements)))
        svc.index.conn.set_trace_callback(None)
        tokenized_past_the_text = [chars - text for text, chars, _ in per_turn[1:]]
        assert max(tokenized_past_the_text) <= 60  # the statement's own words and quoting
        early = max(w for _, _, w in per_turn[1:20])
        late = max(w for _, _, w in per_turn[-20:])
        assert late <= early + 200, (early, late)
    finally:
        svc.close()


def test_recall_finds_an_early_morning_line_and_a_late_line_of_a_long_day(tmp_path):
    svc = _service(tmp_path)
    try:
        svc.log_turn("alice", "user", "The plumber Bartholomew comes at seven", time=DAY)
        for n in range(1, 600):
            svc.log_turn("alice", "user", f"{FILLER} {n}", time=DAY + timedelta(minutes=n))
        svc.log_turn(
            "alice", "user", "Late note: the spare key is under the geranium pot", time=DAY + timedelta(hours=15)
        )
        svc.log_turn("bob", "user", "Bartholomew the plumber has a geranium", time=DAY)  # another, short day
        early = svc.search("when does the plumber Bartholomew come", conversation="alice")
        assert early[0].ref == "alice:2026-06-03:1"
        assert svc.search("where is the spare key", conversation="alice")[0].ref == "alice:2026-06-03:601"
        before = [(h.ref, h.score) for h in svc.search("plumber geranium key", limit=5)]
        svc.reindex()  # the counts a rebuild makes from the whole day are the ones the turns added up
        assert [(h.ref, h.score) for h in svc.search("plumber geranium key", limit=5)] == before
    finally:
        svc.close()


def test_an_index_from_before_the_day_counts_is_rebuilt_once_and_loses_nothing(tmp_path):
    svc = _service(tmp_path)
    for n in range(5):
        svc.log_turn("alice", "user", f"apricot jam number {n}", time=DAY + timedelta(minutes=n))
    svc.workspace.write_text("notes/pantry.md", "Apricot jam is in the pantry\n")
    svc.refresh()
    svc.index_pending()
    svc.close()
    # Make it the version-8 file: the whole days as FTS5 documents, no word counts.
    db = sqlite3.connect(tmp_path / "ws" / "memory" / "index.sqlite3")
    db.executescript(
        "DROP TABLE segterms; DROP TABLE segdf; DROP TABLE segstats; ALTER TABLE segments DROP COLUMN tokens;"
        "CREATE VIRTUAL TABLE segfts USING fts5(body, tokenize='porter unicode61');"
        "INSERT INTO segfts (rowid, body) SELECT id, 'apricot jam' FROM segments;"
        "UPDATE meta SET value='8' WHERE key='schema';"
    )
    db.close()
    svc = _service(tmp_path)  # refilled as it opens, not at the first idle refresh
    try:
        assert {h.ref for h in svc.search("apricot jam", limit=10)} >= {f"alice:2026-06-03:{n}" for n in range(1, 6)}
        assert any(h.path == "notes/pantry.md" for h in svc.search("apricot pantry", limit=10))
        tables = {r[0] for r in svc.index.query("SELECT name FROM sqlite_master")}
        assert "segfts" not in tables and svc.index.query("SELECT days FROM segstats") == [(1,)]
        terms = query_terms("apricot jam")
        assert segment_scores(svc.index, terms, bm25_candidates(svc.index, terms, Scope(), 50))
    finally:
        svc.close()
    svc = _service(tmp_path)  # opened again: kept, not rebuilt
    try:
        assert svc.index.refresh() == 0
    finally:
        svc.close()
