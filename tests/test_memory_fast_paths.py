"""Memory fast paths: per-conversation id slots in the index, and turns indexed by the worker."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

from assistant_framework.memory import MemoryService
from assistant_framework.memory.rowkeys import slot_of, slot_range
from assistant_framework.memory.search import Scope, search
from assistant_framework.workspace import Workspace

UTC = timezone.utc
DAY = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def test_rows_take_ids_in_their_conversations_slot(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.write_text("notes/garden.md", "# Garden\n\nThe lemon tree needs water.\n")
    svc = MemoryService(ws, {}, start_worker=False)
    try:
        svc.refresh()
        for i in range(3):
            svc.log_turn("alice", "user", f"lemon tree question {i}", time=DAY + timedelta(minutes=i))
            svc.log_turn("bob", "user", f"lemon cake recipe {i}", time=DAY + timedelta(minutes=i))
        rows = svc.index.query("SELECT id, conversation FROM entries")
        slots = {conv: {slot_of(i) for i, c in rows if c == conv} for conv in ("alice", "bob", None)}
        assert slots[None] == {0}
        assert len(slots["alice"]) == 1 and len(slots["bob"]) == 1 and slots["alice"] != slots["bob"]
        alice = svc.index.conversation_slot("alice")
        assert slots["alice"] == {alice} and svc.index.conversation_slot("nobody") is None
        segments = svc.index.query("SELECT id, conversation FROM segments")
        assert {slot_of(i) for i, c in segments if c == "alice"} == {alice}
        low, high = slot_range(alice)
        assert all(low <= i <= high for i, c in rows if c == "alice")
        # A scoped search returns only its conversation (plus owner data when asked).
        only = search(svc.index, "lemon", Scope(conversation="alice"), limit=20)
        assert only and {h.conversation for h in only} == {"alice"}
        shared = search(svc.index, "lemon", Scope(conversation="alice", owner_data=True), limit=20)
        assert {h.source for h in shared} == {"conversation", "notes"}
        assert {h.conversation for h in shared} == {"alice", None}
        everyone = svc.search("lemon", limit=20)
        assert {h.conversation for h in everyone} == {"alice", "bob", None}
    finally:
        svc.close()


def test_scoped_search_ranks_like_the_unscoped_one(tmp_path):
    """The slot ranges only skip other conversations' rows: scores equal the global search's."""
    svc = MemoryService(Workspace(tmp_path / "ws"), {}, start_worker=False)
    try:
        words = ["apple pie", "apple tart with pears", "pears only", "apple apple crumble", "bread"]
        for i, text in enumerate(words * 2):
            svc.log_turn("c1" if i < 5 else "c2", "user", text, time=DAY + timedelta(minutes=i))
        scoped = search(svc.index, "apple pears", Scope(conversation="c1"), limit=10)
        everything = [h for h in search(svc.index, "apple pears", Scope(), limit=20) if h.conversation == "c1"]
        assert [(h.ref, h.score) for h in scoped] == [(h.ref, h.score) for h in everything]
    finally:
        svc.close()


def test_logged_turns_are_indexed_by_the_worker_and_searchable_at_once(tmp_path):
    svc = MemoryService(Workspace(tmp_path / "ws"), {"runtime": {"timezone": "UTC"}}, start_worker=True)
    release = threading.Event()
    try:
        svc.worker.submit(lambda: release.wait(10), "hold the worker")  # the index job must wait
        svc.log_turn("42", "user", "My sister Anna lives in Lisbon", time=DAY)
        assert svc.index.query("SELECT count(*) FROM entries")[0][0] == 0  # not indexed yet
        hits = svc.search("where does Anna live")  # search catches up first
        assert hits and hits[0].ref == "42:2026-05-01:1"
        release.set()
        assert svc.drain(10)
        svc.log_turn("42", "assistant", "Noted: Lisbon.", time=DAY + timedelta(minutes=1))
        assert svc.drain(10)
        assert svc.index.query("SELECT count(*) FROM entries WHERE conversation='42'")[0][0] == 2
    finally:
        release.set()
        svc.close()


def test_recall_catches_up_when_the_worker_is_behind(tmp_path):
    config = {"runtime": {"timezone": "UTC"}, "memory": {"recall": {"skip_recent_turns": 2}}}
    svc = MemoryService(Workspace(tmp_path / "ws"), config, start_worker=True)
    release = threading.Event()
    try:
        svc.worker.submit(lambda: release.wait(10), "hold the worker")
        svc.log_turn("7", "user", "the spare key is under the blue flowerpot", time=DAY)
        for i in range(4):
            svc.log_turn("7", "assistant" if i % 2 == 0 else "user", f"filler {i}", time=DAY + timedelta(minutes=i + 1))
        hits = svc.recall("where is the spare key", "7")
        assert hits and hits[0].ref == "7:2026-05-01:1"
    finally:
        release.set()
        svc.close()


def test_turns_logged_but_never_indexed_are_found_after_a_restart(tmp_path):
    """A crash between the append and the worker's indexing loses nothing: refresh reads the file."""
    ws = Workspace(tmp_path / "ws")
    svc = MemoryService(ws, {}, start_worker=True)
    release = threading.Event()
    svc.worker.submit(lambda: release.wait(10), "hold the worker")
    svc.log_turn("9", "user", "the wifi password is written on the router", time=DAY)
    again = MemoryService(ws, {}, start_worker=False)  # another process, as after a restart
    try:
        again.refresh()
        hits = again.search("wifi password")
        assert hits and hits[0].ref == "9:2026-05-01:1"
    finally:
        again.close()
        release.set()
        svc.close()


def test_the_refresh_before_recall_reads_the_index_once_and_sees_hand_edits(tmp_path):
    """Recall's refresh of the owner's folders (every turn): one query for what the index holds of them (it was one
    per folder), and an edit, a new folder and a removed one are still seen."""
    from assistant_framework.memory.sources import HAND_EDITED

    ws = Workspace(tmp_path / "ws")
    ws.write_text("notes/garden.md", "# Garden\n\nThe lemon tree needs water.\n")
    svc = MemoryService(ws, {}, start_worker=False)
    try:
        svc.refresh()
        statements: list[str] = []
        svc.index.conn.set_trace_callback(statements.append)
        assert svc.index.refresh(HAND_EDITED) == 0
        assert len([s for s in statements if "FROM files" in s]) == 1
        ws.write_text("notes/garden.md", "# Garden\n\nThe fig tree needs water.\n")
        ws.write_text("contacts/anna.md", "Anna grows figs.\n")
        assert svc.index.refresh(HAND_EDITED) == 2
        assert {h.path for h in svc.search("fig", limit=10)} == {"notes/garden.md", "contacts/anna.md"}
        ws.delete("contacts/anna.md")
        ws.delete("contacts")
        assert svc.index.refresh(HAND_EDITED) == 1
        assert {h.path for h in svc.search("fig", limit=10)} == {"notes/garden.md"}
    finally:
        svc.close()


def test_the_refresh_before_recall_matches_each_path_against_the_sources_once(tmp_path, monkeypatch):
    """Recall's refresh before every turn walks the owner's folders: each path is matched against the sources'
    globs once per index, not at every refresh (with 300 notes that was 1.5 ms of the turn's 2.7 ms refresh); an
    edit, a new note and a file that is no memory are still told apart at each refresh."""
    from assistant_framework.memory import index as index_module
    from assistant_framework.memory.sources import HAND_EDITED

    ws = Workspace(tmp_path / "ws")
    for i in range(20):
        ws.write_text(f"notes/n{i}.md", f"# Note {i}\n\nThe lemon tree {i}.\n")
    ws.write_text("notes/n0.md.lock", "held")
    svc = MemoryService(ws, {}, start_worker=False)
    try:
        svc.refresh()
        asked: list[str] = []

        def counted(rel, sources=index_module.DEFAULT_SOURCES):
            asked.append(rel)
            return index_module_source_for(rel, sources)

        index_module_source_for = index_module.source_for
        monkeypatch.setattr(index_module, "source_for", counted)
        for _ in range(3):
            assert svc.index.refresh(HAND_EDITED) == 0
        assert asked == []  # every path was matched when the index was filled
        ws.write_text("notes/n3.md", "# Note 3\n\nThe fig tree.\n")
        ws.write_text("notes/new.md", "A fig cake.\n")
        ws.write_text("notes/new.md.lock", "held")
        assert svc.index.refresh(HAND_EDITED) == 2
        assert svc.index.refresh(HAND_EDITED) == 0
        assert sorted(asked) == ["notes/new.md", "notes/new.md.lock"]  # once each, the new paths only
        assert {h.path for h in svc.search("fig", limit=10)} == {"notes/n3.md", "notes/new.md"}
        assert not svc.index.query("SELECT path FROM files WHERE path LIKE '%.lock'")
    finally:
        svc.close()


def test_a_turn_appended_to_a_day_extends_its_segment_without_reading_the_day_again(tmp_path):
    """Each indexed turn adds its own words to its conversation-day's counts (the whole day's rows were read back
    and folded again per turn); the counts are the ones a rebuild makes, so ranking is unchanged."""
    svc = MemoryService(Workspace(tmp_path / "ws"), {}, start_worker=False)
    try:
        for i in range(5):
            svc.log_turn("alice", "user", f"Die Straße {i} needs a lemon tree", time=DAY + timedelta(minutes=i))
        statements: list[str] = []
        svc.index.conn.set_trace_callback(statements.append)
        svc.log_turn("alice", "assistant", "The lemon tree goes to the Straße", time=DAY + timedelta(minutes=9))
        svc.index.conn.set_trace_callback(None)
        assert not [s for s in statements if "FROM entries WHERE path=" in s and "ORDER BY seq" in s]
        query = "SELECT s.path, s.tokens, t.term, t.tf FROM segments s JOIN segterms t ON t.seg = s.id ORDER BY t.term"
        grown = svc.index.query(query)
        assert {(term, tf) for _, _, term, tf in grown} >= {("lemon", 6), ("strass", 6), ("goe", 1)}
        assert {tokens for _, tokens, _, _ in grown} == {5 * 7 + 7}
        svc.reindex()
        assert svc.index.query(query) == grown
    finally:
        svc.close()
