"""Background memory work against a scripted loopback model: facts, episodes, profile, embeddings."""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.config.settings import EmbeddingsSettings
from assistant_framework.memory import MemoryService
from assistant_framework.memory.profile import PROFILE_PATH, PROPOSED_PATH
from assistant_framework.stores.facts import FactStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.llm.client import LLMClient
from messaging_llm_bot.llm.embeddings import EmbeddingClient, EmbeddingError
from tests.fakes.chat_server import FakeChatServer

UTC = timezone.utc


@pytest.fixture
def server():
    with FakeChatServer() as fake:
        yield fake


def _client(server: FakeChatServer) -> LLMClient:
    return LLMClient.from_section({"runners": [{"name": "fake", "base_url": server.base_url, "model": "fake-model"}]})


def _service(tmp_path, server, memory: dict | None = None, **kwargs) -> MemoryService:
    llm = _client(server)

    def complete(messages, **kw):
        return llm.complete(messages, **kw).text

    return MemoryService(Workspace(tmp_path / "ws"), {"memory": memory or {}}, complete=complete, **kwargs)


def test_extraction_runs_in_background_and_merges_facts(tmp_path, server):
    release = threading.Event()

    def handler(request):
        release.wait(10)  # the model is slow; after_turn must not wait for it
        return json.dumps({"facts": [{"subject": "user", "attribute": "favourite drink", "value": "green tea"}]})

    server.set_handler(handler)
    svc = _service(tmp_path, server)
    try:
        row = svc.log_turn("1", "user", "I always drink green tea in the morning")
        svc.after_turn("1", "I always drink green tea in the morning", "Lovely!", turn_ids=[row["turn_id"]])
        assert FactStore(svc.workspace).all() == []  # returned before the model answered
        release.set()
        assert svc.drain(10)
        facts = FactStore(svc.workspace).all()
        assert [(f["attribute"], f["value"], f["source"]) for f in facts] == [
            ("favourite drink", "green tea", "extraction")
        ]
        assert facts[0]["source_ref"] == row["turn_id"]
        request = server.chat_requests[0]
        assert request["response_format"]["type"] == "json_schema"
        assert "green tea" in request["messages"][-1]["content"]
        # Facts become searchable memory.
        svc.refresh()
        assert svc.search("drink", source="facts")[0].snippet.count("green tea") == 1
    finally:
        release.set()
        svc.close()


def test_extracted_facts_are_recalled_in_the_next_conversation_without_waiting_for_the_refresh(tmp_path, server):
    """Told "my sister Anna's birthday is on 14 March", then /new and "when is Anna's birthday?": the fact taken
    from the first conversation is recalled in the second as soon as it is stored. The index's periodic refresh
    runs only after a minute without background work (``refresh_seconds``), which a busy chat never has."""
    server.enqueue(json.dumps({"facts": [{"subject": "Anna", "attribute": "birthday", "value": "14 March"}]}))
    svc = _service(tmp_path, server, {"extract_idle_seconds": 0})
    try:
        row = svc.log_turn("console", "user", "My sister Anna's birthday is on 14 March")
        svc.after_turn("console", "My sister Anna's birthday is on 14 March", "Noted.", turn_ids=[row["turn_id"]])
        assert svc.drain(10)
        hits = svc.recall("When is Anna's birthday?", "console_2-abc")
        assert [(h.source, "14 March" in h.snippet) for h in hits] == [("facts", True)]
    finally:
        svc.close()


@pytest.mark.parametrize(
    "bad",
    ["this is not json", '{"facts": [{"subject": "user"}]}', '{"facts": "tea"}', '```json\n{"oops": 1}\n```', ""],
)
def test_malformed_extraction_is_logged_and_skipped(tmp_path, server, caplog, bad):
    server.enqueue(bad)
    server.enqueue(json.dumps({"facts": [{"subject": "user", "attribute": "pet", "value": "a cat named Miso"}]}))
    svc = _service(tmp_path, server, {"extract_idle_seconds": 0})  # one call per exchange
    try:
        with caplog.at_level(logging.WARNING, logger="assistant_framework.memory"):
            svc.after_turn("1", "hi", "hello")
            svc.after_turn("1", "My cat is Miso", "Cute!")
            assert svc.drain(10)
        facts = FactStore(svc.workspace).all()
        assert [f["value"] for f in facts] == ["a cat named Miso"]  # the worker survived the bad answer
        if bad:
            assert any("fact extraction" in r.getMessage() for r in caplog.records)
    finally:
        svc.close()


def test_fenced_json_is_accepted(tmp_path, server):
    server.enqueue('```json\n{"facts": [{"subject": "user", "attribute": "city", "value": "Porto"}]}\n```')
    svc = _service(tmp_path, server)
    try:
        svc.after_turn("1", "I live in Porto", "Nice")
        assert svc.drain(10)
        assert [f["value"] for f in FactStore(svc.workspace).all()] == ["Porto"]
    finally:
        svc.close()


def test_user_stated_facts_win_over_extraction(tmp_path, server):
    svc = _service(tmp_path, server)
    try:
        FactStore(svc.workspace).add("user", "city", "Lisbon", source="user")
        server.enqueue(json.dumps({"facts": [{"subject": "user", "attribute": "city", "value": "Madrid"}]}))
        svc.after_turn("1", "I was in Madrid last week", "Fun")
        assert svc.drain(10)
        current = FactStore(svc.workspace).lookup(subject="user", attribute="city")
        assert [f["value"] for f in current] == ["Lisbon"]
    finally:
        svc.close()


def test_no_model_means_no_background_work(tmp_path):
    svc = MemoryService(Workspace(tmp_path / "ws"), {}, start_worker=True)
    try:
        svc.after_turn("1", "I like tea", "ok")
        svc.maintenance()
        assert svc.drain(5)
        assert not svc.workspace.exists("facts/facts.json")
    finally:
        svc.close()


def _age(ws: Workspace, rel: str, seconds: float) -> None:
    old = ws.path(rel).stat().st_mtime - seconds
    os.utime(ws.path(rel), (old, old))


def test_episodes_written_for_settled_days_only(tmp_path, server):
    server.set_handler(lambda request: "- Planned the garden: tomatoes in April.")
    svc = _service(tmp_path, server, {"episodes": {"settle_minutes": 30}, "profile": False})
    ws = svc.workspace
    try:
        day = datetime(2026, 4, 1, 10, tzinfo=UTC)
        svc.log_turn("7", "user", "Let's plan the garden", time=day)
        svc.log_turn("7", "assistant", "Tomatoes in April?", time=day + timedelta(minutes=1))
        svc.log_turn("7", "user", "Fresh day", time=day + timedelta(days=1))
        svc.log_turn("7", "assistant", "Still active", time=day + timedelta(days=1, minutes=1))
        _age(ws, "conversations/7/2026-04-01.jsonl", 3600)
        svc.maintenance()
        assert svc.drain(10)
        assert ws.list("memory/episodes/**/*.md") == ["memory/episodes/7/2026-04-01.md"]  # the active day waits
        text = ws.read_text("memory/episodes/7/2026-04-01.md")
        assert "tomatoes in April" in text
        assert "Let's plan the garden" in server.chat_requests[-1]["messages"][-1]["content"]
        assert svc.search("tomatoes", source="episodes")[0].conversation == "7"
        # Nothing new: no second model call for the same day.
        calls = len(server.chat_requests)
        svc.maintenance()
        assert svc.drain(10)
        assert len(server.chat_requests) == calls
    finally:
        svc.close()


def test_profile_refresh_respects_user_edits(tmp_path, server):
    server.set_handler(lambda request: "# Profile\n\n- Drinks green tea.")
    svc = _service(tmp_path, server, {"episodes": False, "profile": {"refresh_hours": 24}})
    ws = svc.workspace
    try:
        FactStore(ws).add("user", "drink", "green tea", source="user")
        now = datetime.now(UTC)
        svc.maintenance(now)
        assert svc.drain(10)
        assert "green tea" in ws.read_text(PROFILE_PATH)
        assert svc.profile_text(1000).startswith("# Profile")
        assert svc.profile_text(10) == "# Profile"
        assert svc.profile_text(0) == ""
        calls = len(server.chat_requests)
        svc.maintenance(now + timedelta(hours=1))  # not due yet
        assert svc.drain(10) and len(server.chat_requests) == calls
        # The user edits the file: a later refresh must not overwrite it.
        ws.write_text(PROFILE_PATH, "# Me\n\nI edited this myself.\n")
        svc.maintenance(now + timedelta(hours=25))
        assert svc.drain(10)
        assert ws.read_text(PROFILE_PATH) == "# Me\n\nI edited this myself.\n"
        assert "green tea" in ws.read_text(PROPOSED_PATH)
        svc.refresh()
        assert svc.search("edited myself", source="profile")
    finally:
        svc.close()


def test_truncated_profile_answer_does_not_replace_a_long_profile(tmp_path, server):
    svc = _service(tmp_path, server, {"episodes": False})
    ws = svc.workspace
    try:
        from assistant_framework.memory.profile import refresh_profile

        server.enqueue("# Profile\n\n" + "- a durable line about the user\n" * 40)
        assert refresh_profile(ws, svc.complete) == PROFILE_PATH
        long_text = ws.read_text(PROFILE_PATH)
        server.enqueue("# Pro")
        assert refresh_profile(ws, svc.complete) is None
        assert ws.read_text(PROFILE_PATH) == long_text
    finally:
        svc.close()


def test_embeddings_are_cached_and_fused(tmp_path, server):
    config = {
        "llm": {"embeddings": {"enabled": True, "base_url": server.base_url, "model": "embed-1"}},
        "memory": {"semantic_weight": 0.5},
    }
    svc = MemoryService(
        Workspace(tmp_path / "ws"),
        config,
        embed=EmbeddingClient(EmbeddingsSettings(**config["llm"]["embeddings"])),
        start_worker=False,
    )
    try:
        svc.log_turn("1", "user", "the red bicycle is in the garage", time=datetime(2026, 5, 1, tzinfo=UTC))
        svc.log_turn("1", "user", "bicycle tyres need air", time=datetime(2026, 5, 1, 1, tzinfo=UTC))
        first = svc.search("red bicycle")
        embed_calls = [r for r in server.requests if r.path.endswith("/embeddings")]
        assert first and embed_calls
        svc.search("red bicycle")
        again = [r for r in server.requests if r.path.endswith("/embeddings")]
        assert len(again) == len(embed_calls)  # every text (and the query) embedded once
    finally:
        svc.close()


def test_embedding_errors_fall_back_to_bm25(tmp_path, server):
    server.set_embeddings_handler(lambda texts: {"status": 500})
    config = {
        "llm": {"embeddings": {"enabled": True, "base_url": server.base_url, "model": "e"}},
        "memory": {"semantic_weight": 0.5},
    }
    svc = MemoryService(
        Workspace(tmp_path / "ws"),
        config,
        embed=EmbeddingClient(EmbeddingsSettings(**config["llm"]["embeddings"])),
        start_worker=False,
    )
    try:
        svc.log_turn("1", "user", "parcel arrives on Tuesday")
        assert "parcel" in svc.search("parcel")[0].snippet
        with pytest.raises(EmbeddingError, match="HTTP 500"):
            EmbeddingClient(EmbeddingsSettings(base_url=server.base_url, model="e"))(["x"])
    finally:
        svc.close()


def test_a_short_profile_is_kept_from_a_cut_answer_and_a_fenced_answer_loses_its_fence(tmp_path, server):
    svc = _service(tmp_path, server, {"episodes": False})
    ws = svc.workspace
    try:
        from assistant_framework.memory.profile import refresh_profile

        server.enqueue(
            "```markdown\n# Profile\n\n- Lives in Hamburg.\n- Has a dog called Bo.\n- Works as a baker.\n- Bakes "
            "sourdough on Sundays.\n```"
        )
        assert refresh_profile(ws, svc.complete) == PROFILE_PATH
        short = ws.read_text(PROFILE_PATH)
        assert short.startswith("# Profile") and "```" not in short  # the fence would reach every prompt
        server.enqueue("# Pro")  # a cut answer: under 30 % of a 120-character profile
        assert refresh_profile(ws, svc.complete) is None
        assert ws.read_text(PROFILE_PATH) == short
    finally:
        svc.close()
