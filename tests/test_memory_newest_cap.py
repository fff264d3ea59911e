"""Stage 1 of a conversation-scoped search scores only the newest ``Ranking.newest_cap``
matches of each rowid range (bounded cost); with a cap above the match count it is the
full ranking."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.config.settings import RankingSettings
from assistant_framework.memory import MemoryService
from assistant_framework.memory.candidates import segment_scores, slot_shares
from assistant_framework.memory.search import Scope, bm25_candidates, query_terms, search
from assistant_framework.workspace import Workspace

UTC = timezone.utc
T0 = datetime(2026, 5, 2, 10, tzinfo=UTC)


@pytest.fixture
def service(tmp_path):
    svc = MemoryService(Workspace(tmp_path / "ws"), {"runtime": {"timezone": "UTC"}}, start_worker=False)
    # Old turns match strongly, newer ones weakly: the full ranking prefers the old ones.
    for i in range(6):
        svc.log_turn("c", "user", "kiwi kiwi kiwi orchard", time=T0 + timedelta(minutes=i))
    for i in range(6, 12):
        svc.log_turn(
            "c",
            "user",
            f"a kiwi was mentioned in passing among many other words number {i}",
            time=T0 + timedelta(minutes=i),
        )
    svc.log_turn("other", "user", "kiwi kiwi kiwi elsewhere", time=T0)
    svc.workspace.write_text("notes/fruit.md", "kiwi kiwi notes about fruit\n")
    svc.refresh()
    svc.index_pending()
    yield svc
    svc.close()


def _ref(n: int) -> str:
    return f"c:2026-05-02:{n}"


def test_small_cap_keeps_only_the_newest_matches(service):
    terms = query_terms("kiwi")
    capped = bm25_candidates(service.index, terms, Scope(conversation="c"), 200, newest_cap=4)
    assert sorted(c.ref for c in capped) == sorted(_ref(n) for n in range(9, 13))
    full = bm25_candidates(service.index, terms, Scope(conversation="c"), 200, newest_cap=0)
    assert len(full) == 12 and full[0].ref in {_ref(n) for n in range(1, 7)}
    # Through search(): without neighbour context only the capped rows can be hits.
    hits = search(
        service.index, "kiwi", Scope(conversation="c"), 10, RankingSettings(neighbour_weight=0.0, newest_cap=4)
    )
    assert {h.ref for h in hits} == {_ref(n) for n in range(9, 13)}


def test_cap_applies_per_range_and_with_filters(service):
    terms = query_terms("kiwi")
    both = bm25_candidates(service.index, terms, Scope(conversation="c", owner_data=True), 200, newest_cap=3)
    assert sorted(c.ref for c in both if c.source == "conversation") == sorted(_ref(n) for n in range(10, 13))
    assert [c.source for c in both].count("notes") == 1  # the owner range has its own cap
    # A time filter takes the other SQL path; the cap counts rows that pass the filter.
    since = Scope(conversation="c", since=T0 + timedelta(minutes=2))
    filtered = bm25_candidates(service.index, terms, since, 200, newest_cap=3)
    assert sorted(c.ref for c in filtered) == sorted(_ref(n) for n in range(10, 13))
    assert len(bm25_candidates(service.index, terms, since, 200, newest_cap=0)) == 10


def test_large_cap_equals_the_uncapped_ranking(service):
    scope = Scope(conversation="c", owner_data=True)
    uncapped = search(service.index, "kiwi orchard", scope, 20, RankingSettings(newest_cap=0))
    large = search(service.index, "kiwi orchard", scope, 20, RankingSettings(newest_cap=1000))
    assert [(h.ref, h.score) for h in large] == [(h.ref, h.score) for h in uncapped]
    assert uncapped[0].ref in {_ref(n) for n in range(1, 7)}


def test_the_configured_cap_is_the_one_the_search_uses(service):
    """The service searches with its ``memory.ranking`` record (no copy with defaults of its own)."""
    ranking = service.settings.ranking
    assert ranking.newest_cap == RankingSettings().newest_cap and service.ranking is ranking
    hits = search(
        service.index, "kiwi", Scope(conversation="c"), 10, RankingSettings(neighbour_weight=0.0, newest_cap=2)
    )
    assert {h.ref for h in hits} == {_ref(11), _ref(12)}


def test_owner_cap_limits_only_the_owner_range(service):
    for i in range(4):
        service.workspace.write_text(f"notes/kiwi-{i}.md", f"kiwi note {i}\n")
    service.refresh()
    service.index_pending()
    terms = query_terms("kiwi")
    scope = Scope(conversation="c", owner_data=True)
    found = bm25_candidates(service.index, terms, scope, 200, newest_cap=0, owner_cap=2)
    assert len([c for c in found if c.source == "conversation"]) == 12
    assert len([c for c in found if c.source == "notes"]) == 2
    assert len(bm25_candidates(service.index, terms, scope, 200, newest_cap=0, owner_cap=0)) == 12 + 5


def test_slot_shares_split_the_budget_and_pass_on_what_a_small_slot_leaves():
    assert slot_shares({0: 1, 1: 12, 2: 1}, 6) == {0: 1, 1: 4, 2: 1}
    assert slot_shares({1: 10, 2: 10}, 6) == {1: 3, 2: 3}
    assert slot_shares({1: 3, 2: 2}, 100) == {1: 3, 2: 2}


def test_unscoped_cap_scores_the_newest_of_each_conversation(service):
    terms = query_terms("kiwi")
    capped = bm25_candidates(service.index, terms, Scope(), 200, unscoped_cap=6)
    # Budget 6 over three slots: "other" and the owner data have one match each, "c" gets the other 4.
    assert sorted(c.ref for c in capped if c.conversation == "c") == sorted(_ref(n) for n in range(9, 13))
    assert {c.conversation for c in capped} == {"c", "other", None} and len(capped) == 6
    full = bm25_candidates(service.index, terms, Scope(), 200, unscoped_cap=0)
    assert len(full) == 14 and full[0].ref in {_ref(n) for n in range(1, 7)} | {"other:2026-05-02:1"}
    large = bm25_candidates(service.index, terms, Scope(), 200, unscoped_cap=100)
    assert [(c.id, c.bm25) for c in large] == [(c.id, c.bm25) for c in full]


def test_whole_day_scores_are_the_same_by_slot_and_by_path(service):
    terms = query_terms("kiwi orchard")
    found = bm25_candidates(service.index, terms, Scope(), 200)
    by_slot = segment_scores(service.index, terms, found, max_slots=10)
    by_path = segment_scores(service.index, terms, found, max_slots=0)
    assert by_slot and by_path == pytest.approx(by_slot)


def test_a_recalled_turn_logged_untrusted_is_outside_without_reading_the_log(service):
    service.log_turn(
        "c",
        "user",
        "forwarded: the wire transfer code is mango",
        meta={"untrusted": True},
        time=T0 + timedelta(hours=1),
    )
    service.log_turn("c", "user", "my own note: mango smoothie recipe", time=T0 + timedelta(hours=2))
    service.index_pending()
    hits = service.search("mango", conversation="c")
    assert {h.snippet: h.outside for h in hits if "mango" in h.snippet} == {
        "forwarded: the wire transfer code is mango": True,
        "my own note: mango smoothie recipe": False,
    }
    # The answer comes from the index: the log file may even be gone.
    for path in {h.path for h in hits}:
        service.workspace.path(path).unlink()
    assert [h.snippet for h in service.outside_hits(hits) if "mango" in h.snippet] == [
        "forwarded: the wire transfer code is mango"
    ]
