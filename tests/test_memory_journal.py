"""The fact-extraction queue on disk (memory/journal.py): kept across a stop, bounded, marks kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant_framework.memory import MemoryService
from assistant_framework.memory.batching import Exchange
from assistant_framework.memory.journal import JOURNAL_PATH, ExtractionJournal
from assistant_framework.stores.facts import FactStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.llm.client import LLMClient
from tests.fakes.chat_server import FakeChatServer

FACT = {"subject": "user", "attribute": "favourite drink", "value": "green tea"}


@pytest.fixture
def server():
    with FakeChatServer() as fake:
        yield fake


def _service(ws: Workspace, server: FakeChatServer) -> MemoryService:
    # No retry of a failed call: a 500 fails the extraction at once (the LLM client's 1 s backoff waited out
    # per call is the client's own behaviour, tested in test_llm*); the journal is what is tested here.
    runner = {"name": "fake", "base_url": server.base_url, "model": "fake-model"}
    llm = LLMClient.from_section({"runners": [runner], "retries_per_runner": 0})

    def complete(messages, **kw):
        return llm.complete(messages, **kw).text

    return MemoryService(ws, {"memory": {"extract_idle_seconds": 0}}, complete=complete)


@pytest.mark.parametrize("untrusted", [False, True])
def test_an_exchange_left_at_a_stop_is_extracted_at_the_next_start_with_its_mark(
    tmp_path: Path, server: FakeChatServer, untrusted: bool
) -> None:
    ws = Workspace(tmp_path / "ws")
    server.set_handler(lambda request: {"status": 500})  # the model server fails: the exchange waits for a retry
    first = _service(ws, server)
    try:
        first.after_turn("1", "I always drink green tea", "Lovely!", turn_ids=["t1"], untrusted=untrusted)
        assert first.drain(10)
        assert first.extraction.pending() == 1
    finally:
        first.close()
    assert FactStore(ws).all() == []
    left = ExtractionJournal(ws).load()
    assert [(e.user_text, e.turn_ids, e.untrusted) for e in left] == [("I always drink green tea", ["t1"], untrusted)]

    server.set_handler(lambda request: json.dumps({"facts": [FACT]}))
    second = _service(ws, server)
    try:
        assert second.drain(10)
        facts = FactStore(ws).all()
        assert [(f["value"], f["source_ref"], bool(f.get("untrusted"))) for f in facts] == [
            ("green tea", "t1", untrusted)
        ]
        assert not ws.exists(JOURNAL_PATH)
    finally:
        second.close()


def test_the_journal_keeps_the_newest_entries_and_cuts_long_texts(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    journal = ExtractionJournal(ws, max_entries=3)
    for n in range(5):
        journal.add(Exchange("1", f"message {n} " + "x" * 40_000, "reply"))
    left = journal.load()
    assert [e.user_text.split()[1] for e in left] == ["2", "3", "4"]
    assert all(len(e.user_text) == 32_000 for e in left)
    journal.remove(left[:2])
    assert [e.user_text.split()[1] for e in journal.load()] == ["4"]


def test_a_damaged_journal_is_moved_aside_and_the_start_goes_on(tmp_path: Path, server: FakeChatServer) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.write_text(JOURNAL_PATH, "{not json")
    svc = _service(ws, server)
    try:
        assert svc.drain(5)
        assert ws.list("state/memory_extraction_queue.json.broken-*")
        assert not ws.exists(JOURNAL_PATH)
    finally:
        svc.close()
