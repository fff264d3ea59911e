"""Memory index: incremental updates from real files, reindex equivalence, filters, date phrases."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.memory import MemoryService
from assistant_framework.memory.index import MemoryIndex
from assistant_framework.memory.log import safe_conversation_id
from assistant_framework.memory.search import Scope, query_terms, search
from assistant_framework.memory.sources import source_for
from assistant_framework.memory.timeparse import parse_date_range
from assistant_framework.workspace import Workspace

UTC = timezone.utc


def _bump_mtime(ws: Workspace, rel: str) -> None:
    st = os.stat(ws.path(rel))
    os.utime(ws.path(rel), ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))


def test_log_turn_writes_l0_jsonl_with_stable_turn_ids(ws, service):
    when = datetime(2026, 5, 3, 9, 30, tzinfo=UTC)
    first = service.log_turn("chat/1", "user", "hello there", time=when, message_id=11)
    second = service.log_turn("chat/1", "assistant", "hi!", time=when + timedelta(minutes=1), message_id=12)
    folder = safe_conversation_id("chat/1")
    assert "/" not in folder and folder != "chat/1"
    rows = ws.read_jsonl(f"conversations/{folder}/2026-05-03.jsonl")
    assert [r["text"] for r in rows] == ["hello there", "hi!"]
    assert rows[0]["conversation"] == "chat/1" and rows[0]["message_id"] == 11
    assert rows[0]["time"] == "2026-05-03T09:30:00+00:00"
    assert first["turn_id"] == f"{folder}:2026-05-03:1" and second["turn_id"] == f"{folder}:2026-05-03:2"
    # A new service (restart) continues the numbering from the file.
    again = MemoryService(ws, {}, start_worker=False)
    try:
        third = again.log_turn("chat/1", "user", "back", time=when + timedelta(hours=1))
    finally:
        again.close()
    assert third["turn_id"].endswith(":3")
    with pytest.raises(ValueError, match="role"):
        service.log_turn("c", "system", "x")


def test_logged_turns_are_searchable_at_once(service):
    service.log_turn("42", "user", "My sister Anna lives in Lisbon", time=datetime(2026, 5, 1, tzinfo=UTC))
    hits = service.search("where does Anna live")
    assert hits and hits[0].source == "conversation"
    assert "Lisbon" in hits[0].snippet and hits[0].ref == "42:2026-05-01:1"
    assert hits[0].path == "conversations/42/2026-05-01.jsonl" and hits[0].time.startswith("2026-05-01")


def test_incremental_refresh_sees_appends_edits_and_deletes(ws, service):
    ws.write_text("notes/garden.md", "# Garden\n\nPlant tomatoes in April.\n")
    ws.append_jsonl("collectors/rss/items.jsonl", {"title": "Kernel 7.1 released", "published": "2026-05-02T10:00:00Z"})
    service.refresh()
    assert [h.source for h in service.search("tomatoes")] == ["notes"]
    assert service.search("kernel")[0].source == "collector:rss"

    # Append: only the new line is read (offset tracking), and it becomes searchable.
    ws.append_jsonl("collectors/rss/items.jsonl", {"title": "Python 3.15 beta", "published": "2026-05-03T10:00:00Z"})
    service.refresh()
    hit = service.search("python beta")[0]
    assert hit.ref == "L2" and hit.time.startswith("2026-05-03")
    assert service.index.stats().by_source["collector:rss"] == 2

    # Edit a note: the old text is gone, the new one found.
    ws.write_text("notes/garden.md", "# Garden\n\nPlant peppers in May.\n")
    _bump_mtime(ws, "notes/garden.md")
    service.refresh()
    assert service.search("tomatoes") == []
    assert service.search("peppers")[0].path == "notes/garden.md"

    # Rewrite the JSONL file with different content of a larger size: it is re-read, not appended.
    ws.write_text(
        "collectors/rss/items.jsonl", json.dumps({"title": "Only item now, about gardening tools and soil"}) + "\n"
    )
    _bump_mtime(ws, "collectors/rss/items.jsonl")
    service.refresh()
    assert service.search("kernel") == [] and service.search("python beta") == []
    assert service.index.stats().by_source["collector:rss"] == 1

    # Delete a file: its rows go.
    ws.delete("notes/garden.md")
    service.refresh()
    assert service.search("peppers") == []
    assert "notes" not in service.index.stats().by_source


def test_refresh_without_changes_reads_nothing(ws, service):
    ws.write_text("notes/a.md", "alpha beta\n")
    assert service.index.refresh() == 1
    assert service.index.refresh() == 0


def test_half_written_jsonl_line_waits_for_its_newline(ws, service):
    path = ws.path("collectors/mail/inbox.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'{"subject": "invoice from plumber"}\n{"subject": "holiday pho')
    service.refresh()
    assert len(service.search("invoice")) == 1 and service.search("holiday") == []
    with open(path, "ab") as handle:
        handle.write(b'tos from Crete"}\n')
    service.refresh()
    assert service.search("holiday crete")[0].ref == "L2"


def test_reindex_equals_incremental(ws, service):
    when = datetime(2026, 4, 1, 8, tzinfo=UTC)
    for i in range(30):
        service.log_turn(
            "7",
            "user" if i % 2 == 0 else "assistant",
            f"message {i} about topic{i % 5}",
            time=when + timedelta(hours=i * 5),
        )
    ws.write_text("notes/trip.md", "# Trip\n\n" + "Packing list: boots, tent, stove.\n" * 40)
    ws.write_json(
        "facts/facts.json",
        [{"id": "f1", "subject": "user", "attribute": "likes", "value": "green tea", "status": "current"}],
    )
    ws.write_text("learnings/2026-04.md", "- The user prefers short answers.\n")
    ws.write_text("memory/episodes/7/2026-04-01.md", "# 7 — 2026-04-01\n\n- Talked about topic1.\n")
    ws.write_text("profile.md", "# Profile\n\nLives in Porto.\n")
    service.refresh()
    incremental = service.index.snapshot()
    assert service.reindex() == len(incremental)
    assert service.index.snapshot() == incremental
    sources = set(service.index.stats().by_source)
    assert {"conversation", "notes", "facts", "learnings", "episodes", "profile"} <= sources
    # Deleting the index loses nothing: a new one is built from the files.
    service.close()
    ws.path("memory/index.sqlite3").unlink()
    fresh = MemoryService(ws, {}, start_worker=False)
    try:
        fresh.refresh()
        assert fresh.index.snapshot() == incremental
    finally:
        fresh.close()


def test_source_filter_and_collector_prefix(ws, service):
    ws.write_text("notes/bike.md", "Bike chain needs oil\n")
    ws.append_jsonl("collectors/rss/items.jsonl", {"title": "Bike lanes extended downtown"})
    ws.append_jsonl("collectors/mail/inbox.jsonl", {"subject": "Bike shop receipt"})
    service.refresh()
    assert {h.source for h in service.search("bike")} == {"notes", "collector:rss", "collector:mail"}
    assert [h.source for h in service.search("bike", source="notes")] == ["notes"]
    assert [h.source for h in service.search("bike", source="collector:mail")] == ["collector:mail"]
    assert {h.source for h in service.search("bike", source="collector:*")} == {"collector:rss", "collector:mail"}


def test_superseded_facts_are_not_indexed(ws, service):
    ws.write_json(
        "facts/facts.json",
        [
            {"id": "f1", "subject": "user", "attribute": "city", "value": "Berlin", "status": "superseded"},
            {"id": "f2", "subject": "user", "attribute": "city", "value": "Hamburg", "status": "current"},
        ],
    )
    service.refresh()
    assert service.search("berlin") == []
    assert "Hamburg" in service.search("city")[0].snippet


def test_date_filters_and_date_phrases(service):
    service.log_turn("9", "user", "dinner at the Thai place", time=datetime(2026, 5, 2, 19, tzinfo=UTC))
    service.log_turn("9", "user", "dinner with my parents", time=datetime(2026, 6, 8, 19, tzinfo=UTC))
    may = service.search("dinner", since=datetime(2026, 5, 1, tzinfo=UTC), until=datetime(2026, 6, 1, tzinfo=UTC))
    assert [h.snippet for h in may] == ["dinner at the Thai place"]
    now = datetime(2026, 6, 10, 12, tzinfo=UTC)
    assert "Thai" in service.search("dinner in May", now=now)[0].snippet
    assert "parents" in service.search("dinner last week", now=now)[0].snippet
    # A date phrase prefers rows from then; it does not hide the rest.
    assert len(service.search("dinner in May", now=now)) == 2


def test_conversation_filter(service):
    service.log_turn("a", "user", "secret plan alpha", time=datetime(2026, 5, 2, tzinfo=UTC))
    service.log_turn("b", "user", "public plan beta", time=datetime(2026, 5, 2, tzinfo=UTC))
    assert {h.conversation for h in service.search("plan")} == {"a", "b"}
    assert [h.conversation for h in service.search("plan", conversation="b")] == ["b"]


def test_neighbouring_turn_ranks_the_answer(service):
    """The answer turn often lacks the query's words; its neighbour (the question) has them."""
    t = datetime(2026, 5, 2, 10, tzinfo=UTC)
    service.log_turn("n", "user", "Which bakery do you recommend for sourdough?", time=t)
    service.log_turn("n", "assistant", "Try Miller & Sons on Elm Street.", time=t + timedelta(seconds=1))
    for i in range(8):
        service.log_turn("n", "user", f"unrelated chat number {i} about weather", time=t + timedelta(minutes=i + 1))
    refs = [h.ref for h in service.search("sourdough bakery", limit=3)]
    assert refs[:2] == ["n:2026-05-02:1", "n:2026-05-02:2"]


def test_query_terms_and_sources():
    assert query_terms("What did Caroline research?") == ["caroline", "research"]
    assert query_terms("what is it") == ["what", "is", "it"]  # only stopwords: keep them
    assert source_for("conversations/1/2026-05-01.jsonl") == "conversation"
    assert source_for("collectors/rss/items.jsonl") == "collector:rss"
    assert source_for("memory/episodes/1/2026-05-01.md") == "episodes"
    assert source_for("memory/index.sqlite3") is None
    assert source_for("state/collectors.json") is None
    assert source_for("notes/.garden.md.tmp-x") is None


NOW = datetime(2026, 6, 10, 15, 0, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(
    "text, since, until, rest",
    [
        ("what did I say yesterday", "2026-06-09", "2026-06-10", "what did I say"),
        ("today's plan", "2026-06-10", "2026-06-11", "'s plan"),
        ("notes from last week", "2026-06-01", "2026-06-08", "notes from"),
        ("this week", "2026-06-08", "2026-06-15", ""),
        ("last month", "2026-05-01", "2026-06-01", ""),
        ("trip in May", "2026-05-01", "2026-06-01", "trip"),
        ("in December", "2025-12-01", "2026-01-01", ""),
        ("May 2024 report", "2024-05-01", "2024-06-01", "report"),
        ("meeting on 3 June", "2026-06-03", "2026-06-04", "meeting"),
        ("the 12th of March", "2026-03-12", "2026-03-13", ""),
        ("June 5, 2025 dinner", "2025-06-05", "2025-06-06", "dinner"),
        ("what happened in 2023", "2023-01-01", "2024-01-01", "what happened"),
        ("2026-01-02 standup", "2026-01-02", "2026-01-03", "standup"),
        ("2 days ago", "2026-06-08", "2026-06-09", ""),
        ("three weeks ago", "2026-05-18", "2026-05-25", ""),
        ("past 3 days", "2026-06-07", "2026-06-11", ""),
        ("on friday", "2026-06-05", "2026-06-06", ""),
        ("last wednesday", "2026-06-03", "2026-06-04", ""),
        ("last year", "2025-01-01", "2026-01-01", ""),
    ],
)
def test_parse_date_range(text, since, until, rest):
    found = parse_date_range(text, NOW)
    assert found is not None, text
    assert found.since.isoformat()[:10] == since and found.until.isoformat()[:10] == until
    assert found.since.tzinfo is not None
    assert found.rest == rest


@pytest.mark.parametrize(
    "text", ["may I ask something", "remind me to call mom", "buy 2023 widgets? no: 12345", "version 1.2"]
)
def test_parse_date_range_ignores_non_dates(text):
    found = parse_date_range(text, NOW)
    assert found is None or found.phrase == "2023"  # a bare year is a year


def test_search_on_a_raw_index_respects_scope(ws):
    index = MemoryIndex(ws)
    try:
        ws.append_jsonl(
            "conversations/x/2026-01-01.jsonl",
            {
                "time": "2026-01-01T10:00:00+00:00",
                "conversation": "x",
                "role": "user",
                "text": "pancake recipe",
                "turn_id": "x:2026-01-01:1",
            },
        )
        ws.write_text("notes/food.md", "pancake flour eggs milk\n")
        index.refresh()
        both = search(index, "pancake", Scope(conversation="x", owner_data=True))
        only = search(index, "pancake", Scope(conversation="x"))
        assert {h.source for h in both} == {"conversation", "notes"}
        assert [h.source for h in only] == ["conversation"]
    finally:
        index.close()


def test_concurrent_log_turns_and_searches(ws, service):
    import threading

    errors: list[BaseException] = []

    def writer(conv: str) -> None:
        try:
            for i in range(40):
                service.log_turn(conv, "user", f"note {i} about kayaks", time=datetime(2026, 5, 1, 8, tzinfo=UTC))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(40):
                service.recall("kayaks", "a")
                service.refresh()
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(c,)) for c in ("a", "a", "b")] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    rows = ws.read_jsonl("conversations/a/2026-05-01.jsonl")
    assert len(rows) == 80 and len({r["turn_id"] for r in rows}) == 80
    assert service.index.stats().by_source["conversation"] == 120
    service.refresh()
    assert service.index.stats().by_source["conversation"] == 120


def test_a_source_prefix_filter_takes_underscores_and_percent_signs_literally(ws, service):
    # "collector:my_*" meant the collectors whose name starts with "my_", not "my" + any character.
    for name in ("my_feed", "myXfeed", "my%feed"):
        ws.write_text(f"collectors/{name}/2026-01-01.md", f"zeppelin news from {name}\n")
    service.refresh()
    assert {h.source for h in service.search("zeppelin")} == {
        "collector:my_feed",
        "collector:myXfeed",
        "collector:my%feed",
    }
    assert {h.source for h in service.search("zeppelin", source="collector:my_*")} == {"collector:my_feed"}
    assert {h.source for h in service.search("zeppelin", source="collector:my%*")} == {"collector:my%feed"}


def test_a_link_in_notes_to_a_file_memory_does_not_index_is_skipped(ws, service):
    import os

    ws.write_text("state/web/token", "web-page-token-f00dfeed\n")
    ws.write_text("notes/real.md", "the token of the garden gate is under the pot\n")
    os.makedirs(ws.path("notes/d"), exist_ok=True)
    os.symlink("../../state/web/token", ws.path("notes/d/t.md"))
    os.symlink("../real.md", ws.path("notes/d/alias.md"))  # a link to a note: still a note
    service.refresh()
    assert not service.search("f00dfeed")
    assert {h.path for h in service.search("garden gate token")} == {"notes/real.md", "notes/d/alias.md"}
