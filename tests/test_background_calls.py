"""Background model calls never disturb the chat: they wait for an idle chat, batch the turns,
log one line when they fail, back off, and follow /reload to the new runner."""

from __future__ import annotations

import json
import logging
import threading

from assistant_framework.background import BackgroundWorker
from assistant_framework.memory import MemoryService
from assistant_framework.memory.extract import EXTRACTION_PROMPT
from assistant_framework.stores.facts import FactStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.agent.loop import Agent
from messaging_llm_bot.llm.client import LLMClient
from messaging_llm_bot.runtime import BackgroundModel, build_runtime
from tests.fakes.chat_server import FakeChatServer


def _is_extraction(request) -> bool:
    return request["messages"][0]["content"] == EXTRACTION_PROMPT


def _facts(value: str) -> str:
    return json.dumps({"facts": [{"subject": "user", "attribute": "likes", "value": value}]})


def _agent_with_memory(make_agent, tmp_path, server, idle: float) -> Agent:
    config = {
        "llm": {
            "runners": [{"name": "fake", "base_url": server.base_url, "model": "m", "timeout_seconds": 10}],
            "retries_per_runner": 0,
        },
        "runtime": {"timezone": "UTC"},
        "memory": {"extract_idle_seconds": idle},
    }
    workspace = Workspace(tmp_path / "ws")
    llm = LLMClient.from_section(config["llm"])
    memory = MemoryService(workspace, config, complete=BackgroundModel(llm))
    return make_agent(config, workspace, llm=llm, memory=memory)


def test_extraction_waits_for_idle_chat_and_batches_its_turns(tmp_path, make_agent):
    with FakeChatServer() as server:
        server.set_handler(lambda r: _facts("tea") if _is_extraction(r) else '{"reply": "ok"}')
        agent = _agent_with_memory(make_agent, tmp_path, server, idle=0.5)
        try:
            for text in ("I like tea", "I like rain", "I like maps"):
                assert agent.handle(AgentMessage("c", text)).ok
            assert server.wait_for_requests(4, timeout=10, path="/v1/chat/completions")
            requests = server.chat_requests
            assert [_is_extraction(r) for r in requests] == [False, False, False, True]  # none between two turns
            batch = requests[3]["messages"][1]["content"]
            assert all(t in batch for t in ("I like tea", "I like rain", "I like maps"))
            assert agent.memory.drain(5)
            assert [f["value"] for f in FactStore(agent.workspace).all()] == ["tea"]
            assert len(server.chat_requests) == 4
        finally:
            agent.memory.close()


def test_extraction_never_runs_while_a_turn_is_being_answered(tmp_path, make_agent):
    with FakeChatServer() as server:
        release, arrived = threading.Event(), threading.Event()

        def handler(request):
            if _is_extraction(request):
                return _facts("tea")
            if "slow" in request["messages"][-1]["content"]:
                arrived.set()
                release.wait(10)
            return '{"reply": "ok"}'

        server.set_handler(handler)
        agent = _agent_with_memory(make_agent, tmp_path, server, idle=0.2)
        try:
            agent.handle(AgentMessage("c", "I like tea"))
            worker = threading.Thread(target=agent.handle, args=(AgentMessage("c", "slow question"),))
            worker.start()
            assert arrived.wait(10)
            threading.Event().wait(0.6)  # well past the idle time, but a turn is still running
            assert not any(_is_extraction(r) for r in server.chat_requests)
            release.set()
            worker.join(10)
            assert server.wait_for_requests(3, timeout=10, path="/v1/chat/completions")
            assert _is_extraction(server.chat_requests[2])
            assert "slow question" in server.chat_requests[2]["messages"][1]["content"]
        finally:
            release.set()
            agent.memory.close()


def test_failing_extraction_logs_one_line_keeps_turns_and_retries(tmp_path, caplog):
    with FakeChatServer() as server:
        server.enqueue({"status": 500}, _facts("tea"))
        llm = LLMClient.from_section(
            {"runners": [{"name": "fake", "base_url": server.base_url, "model": "m"}], "retries_per_runner": 0}
        )
        svc = MemoryService(
            Workspace(tmp_path / "ws"), {"memory": {"extract_idle_seconds": 0}}, complete=BackgroundModel(llm)
        )
        svc.extraction.backoff_seconds = 0.2
        try:
            with caplog.at_level(logging.DEBUG):
                svc.after_turn("1", "I like tea", "ok")
                assert server.wait_for_requests(2, timeout=10, path="/v1/chat/completions")
                assert svc.drain(10)
            assert [f["value"] for f in FactStore(svc.workspace).all()] == ["tea"]
            assert "I like tea" in server.chat_requests[1]["messages"][1]["content"]
            failed = [r for r in caplog.records if "fact extraction for 1 failed" in r.getMessage()]
            assert len(failed) == 1 and failed[0].levelno == logging.WARNING and failed[0].exc_info is None
            assert "1 exchange(s) kept, next try in" in failed[0].getMessage()
            assert not any(r.exc_info for r in caplog.records if r.levelno >= logging.INFO)
        finally:
            svc.close()


def test_failing_background_job_logs_one_line_and_the_traceback_at_debug(caplog):
    worker = BackgroundWorker("test")

    def broken() -> None:
        raise RuntimeError("kaput\nsecond line")

    with caplog.at_level(logging.DEBUG, logger="assistant_framework.background"):
        worker.submit(broken, "broken job")
        assert worker.drain(5)
    worker.stop()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        "test: background job 'broken job' failed: RuntimeError: kaput second line"
    ]
    assert warnings[0].exc_info is None
    assert any(r.levelno == logging.DEBUG and r.exc_info for r in caplog.records)


def test_reload_moves_background_calls_to_the_new_runner(tmp_path):
    with FakeChatServer() as old, FakeChatServer() as new:
        config = tmp_path / "config"
        config.mkdir()

        def write(base_url: str) -> None:
            llm = {
                "runners": [{"name": "local", "base_url": base_url, "model": "m", "timeout_seconds": 10}],
                "retries_per_runner": 0,
            }
            (config / "llm.json").write_text(json.dumps(llm))

        write(old.base_url)
        (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
        (config / "memory.json").write_text(json.dumps({"extract_idle_seconds": 0}))
        runtime = build_runtime(config, tmp_path / "ws")
        try:
            write(new.base_url)
            assert runtime.reload().error is None
            new.enqueue(_facts("tea"))
            runtime.memory.after_turn("1", "I like tea", "ok")
            assert runtime.memory.drain(10)
            assert [_is_extraction(r) for r in new.chat_requests] == [True]
            assert old.chat_requests == []
        finally:
            runtime.shutdown(timeout=5)


def test_background_extra_body_goes_only_to_background_calls(tmp_path, make_agent):
    with FakeChatServer() as server:
        server.set_handler(lambda r: _facts("tea") if _is_extraction(r) else '{"reply": "ok"}')
        config = {
            "llm": {
                "runners": [{"name": "fake", "base_url": server.base_url, "model": "m", "extra_body": {"id_slot": 0}}],
                "background_extra_body": {"id_slot": 1},
                "retries_per_runner": 0,
            },
            "runtime": {"timezone": "UTC"},
            "memory": {"extract_idle_seconds": 0},
        }
        workspace = Workspace(tmp_path / "ws")
        llm = LLMClient.from_section(config["llm"])
        memory = MemoryService(workspace, config, complete=BackgroundModel(llm))
        agent = make_agent(config, workspace, llm=llm, memory=memory)
        try:
            agent.handle(AgentMessage("c", "I like tea"))
            assert memory.drain(10)
        finally:
            memory.close()
        assert [(_is_extraction(r), r["id_slot"]) for r in server.chat_requests] == [(False, 0), (True, 1)]
