"""Memory work against a model that answers badly, over the shared fake server: nothing the owner
wrote is lost, a bad answer is skipped with one log line, and no run makes more calls than its budget."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.memory import MemoryService
from assistant_framework.stores.facts import FactStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.llm.client import LLMClient
from tests.fakes.chat_server import FakeChatServer

UTC = timezone.utc
DAY = datetime(2026, 4, 1, 10, tzinfo=UTC)


@pytest.fixture
def server():
    with FakeChatServer() as fake:
        yield fake


def _service(tmp_path, server: FakeChatServer, memory: dict, *, worker: bool = False) -> MemoryService:
    llm = LLMClient.from_section(
        {"runners": [{"name": "fake", "base_url": server.base_url, "model": "fake-model"}], "retries_per_runner": 0}
    )

    def complete(messages, **kw):
        return llm.complete(messages, **kw).text

    return MemoryService(Workspace(tmp_path / "ws"), {"memory": memory}, complete=complete, start_worker=worker)


def _day(svc: MemoryService, conversation: str, turns: int) -> None:
    for i in range(turns):
        svc.log_turn(
            conversation,
            "user" if i % 2 == 0 else "assistant",
            f"turn {i} about the garden",
            time=DAY + timedelta(minutes=i),
        )


def _later() -> datetime:
    return datetime.now(UTC) + timedelta(hours=2)  # every log has settled by then


def test_days_too_short_for_an_episode_do_not_use_up_the_budget_of_every_run(tmp_path, server):
    # Six one-turn days (a reminder chat, a single question) sort before the day worth a summary.
    server.set_handler(lambda request: "- Planned the garden.")
    svc = _service(tmp_path, server, {"episodes": {"max_per_run": 5}, "profile": False})
    try:
        for conversation in ("a1", "a2", "a3", "a4", "a5", "a6"):
            _day(svc, conversation, 1)
        _day(svc, "z", 4)
        svc.maintenance(_later())
        svc.maintenance(_later())
        # Before: every run took the first five pending days, all too short: no model call, no episode, ever.
        assert svc.workspace.list("memory/episodes/**/*.md") == ["memory/episodes/z/2026-04-01.md"]
        assert len(server.chat_requests) == 1
    finally:
        svc.close()


def test_a_runaway_episode_answer_is_cut_to_whole_lines(tmp_path, server, caplog):
    # A model stuck in a loop: 100 KB instead of 3-8 bullet points.
    server.set_handler(lambda request: "- Planned the garden.\n" + "- and then the garden again\n" * 4000)
    svc = _service(tmp_path, server, {"profile": False})
    try:
        _day(svc, "7", 4)
        with caplog.at_level(logging.WARNING, logger="assistant_framework.memory.episodes"):
            svc.maintenance(_later())
        text = svc.workspace.read_text("memory/episodes/7/2026-04-01.md")
        assert "- Planned the garden." in text
        assert len(text) <= 4100  # before: all 100 KB, a hundred and more index entries for one day
        assert text.endswith("- and then the garden again\n")  # whole lines only
        assert len([r for r in caplog.records if "episode" in r.getMessage()]) == 1
    finally:
        svc.close()


def test_extracted_facts_with_a_huge_field_are_skipped_with_one_line(tmp_path, server, caplog):
    huge = "x" * 50_000
    server.enqueue(
        json.dumps(
            {
                "facts": [
                    {"subject": "user", "attribute": huge, "value": "tea"},
                    {"subject": huge, "attribute": "drink", "value": "tea"},
                    {"subject": "user", "attribute": "drink", "value": huge},
                    {"subject": "user", "attribute": "pet", "value": "a cat named Miso"},
                ]
            }
        )
    )
    svc = _service(tmp_path, server, {"extract_idle_seconds": 0}, worker=True)
    try:
        svc.after_turn("1", "My cat is called Miso", "Nice!")
        with caplog.at_level(logging.WARNING, logger="assistant_framework.memory"):
            assert svc.drain(10)
        facts = FactStore(svc.workspace).all()
        # Before: the 50 KB subject and attribute were stored as facts (only the value had a limit).
        assert [(f["subject"], f["attribute"], f["value"]) for f in facts] == [("user", "pet", "a cat named Miso")]
        assert len(svc.workspace.read_text("facts/facts.json")) < 2000
        assert len([r for r in caplog.records if "fact extraction" in r.getMessage()]) == 1
    finally:
        svc.close()


def test_facts_file_broken_by_a_hand_edit_keeps_the_exchange_until_it_is_fixed(tmp_path, server, caplog):
    server.set_handler(
        lambda request: json.dumps({"facts": [{"subject": "user", "attribute": "pet", "value": "a cat named Miso"}]})
    )
    svc = _service(tmp_path, server, {"extract_idle_seconds": 0}, worker=True)
    ws = svc.workspace
    broken = '[{"subject": "user", "attribute": "drink", "value": "tea",}]\n'  # a trailing comma typed by hand
    try:
        ws.write_text("facts/facts.json", broken)
        with caplog.at_level(logging.WARNING, logger="assistant_framework.memory"):
            svc.after_turn("1", "My cat is called Miso", "Nice!")
            assert svc.drain(10)
        assert ws.read_text("facts/facts.json") == broken  # the owner's file as they left it
        assert server.chat_requests == []  # no model call whose facts could not be stored
        assert len([r for r in caplog.records if "facts/facts.json" in r.getMessage()]) == 1
        # Fixed: the exchange was kept (before: its facts were dropped, one warning per fact).
        ws.write_text("facts/facts.json", broken.replace(",}", "}"))
        assert svc.drain(10)
        assert [f["value"] for f in FactStore(ws).all()] == ["tea", "a cat named Miso"]
    finally:
        svc.close()


@pytest.mark.parametrize(
    "answer",
    [
        "Here are the facts {as JSON}:\n```json\n{FACTS}\n```",
        "```json\n{FACTS}\n```\n\nNote: I left out the small talk {greetings}.",
        "Sure!\n```\n{FACTS}\n```\nAnything else?",
    ],
)
def test_fenced_json_with_braces_in_the_prose_around_it_is_accepted(tmp_path, server, answer):
    facts = json.dumps({"facts": [{"subject": "user", "attribute": "pet", "value": "a cat named Miso"}]})
    server.enqueue(answer.replace("{FACTS}", facts))
    svc = _service(tmp_path, server, {"extract_idle_seconds": 0}, worker=True)
    try:
        svc.after_turn("1", "My cat is called Miso", "Nice!")
        assert svc.drain(10)
        # Before: the braces in the prose made the answer "not JSON": the fact was lost.
        assert [f["value"] for f in FactStore(svc.workspace).all()] == ["a cat named Miso"]
    finally:
        svc.close()


def test_a_model_server_that_is_down_costs_one_episode_call_per_run_not_one_per_day(tmp_path, caplog):
    """Five days waiting for an episode and the server down: one failed call, one warning naming why."""
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = LLMClient.from_section(
        {
            "runners": [
                {"name": "down", "base_url": f"http://127.0.0.1:{port}/v1", "model": "m", "timeout_seconds": 5}
            ],
            "retries_per_runner": 0,
        }
    )
    tries = []

    def complete(messages, **kw):
        tries.append(1)
        return llm.complete(messages, **kw).text

    svc = MemoryService(
        Workspace(tmp_path / "ws"), {"memory": {"profile": False}}, complete=complete, start_worker=False
    )
    try:
        for conversation in ("a", "b", "c", "d", "e"):
            _day(svc, conversation, 4)
        with caplog.at_level(logging.WARNING, logger="assistant_framework.memory.episodes"):
            svc.maintenance(_later())
        assert len(tries) == 1  # before: five calls, five warnings every hour
        [line] = [r.getMessage() for r in caplog.records if "episode" in r.getMessage()]
        assert "LLMError" in line and "not reachable" in line  # the reason, not only the type
    finally:
        svc.close()


def test_an_episode_the_owner_deleted_stays_deleted_until_the_day_changes(tmp_path, server):
    import os

    server.set_handler(lambda request: "- Planned the garden.")
    svc = _service(tmp_path, server, {"profile": False})
    try:
        _day(svc, "7", 4)
        svc.maintenance(_later())
        episode = "memory/episodes/7/2026-04-01.md"
        assert svc.workspace.exists(episode) and len(server.chat_requests) == 1
        svc.workspace.delete(episode)  # "forget that day's summary"
        svc.maintenance(_later())
        assert not svc.workspace.exists(episode) and len(server.chat_requests) == 1  # before: written again
        day_log = svc.workspace.path("conversations/7/2026-04-01.jsonl")
        svc.log_turn("7", "user", "one more thing about the garden", time=DAY + timedelta(minutes=30))
        os.utime(day_log, (day_log.stat().st_atime, day_log.stat().st_mtime + 1))  # surely later than the record
        svc.maintenance(_later())
        assert svc.workspace.exists(episode) and len(server.chat_requests) == 2  # the day changed: a new summary
    finally:
        svc.close()
