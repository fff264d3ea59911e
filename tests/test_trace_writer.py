"""The background trace writer: turns hand traces off, reads still see them, failures are logged."""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone
from pathlib import Path

from assistant_framework.traces import TraceStore, drain_traces, new_trace_id
from messaging_llm_bot.agent.incoming import AgentMessage


def test_write_later_is_redacted_and_visible_to_any_store_of_the_workspace(workspace):
    store = TraceStore(workspace, keep=3, secrets=["sk-very-secret"])
    ids = [store.write_later({"time": "2026-05-01T10:00:00", "user_text": f"key sk-very-secret {i}"}) for i in range(5)]
    other = TraceStore(workspace)  # e.g. the CLI or /stats: reads wait for queued writes
    assert other.ids() == ids[-3:]  # pruned to keep=3, in order
    assert other.load(ids[-1])["user_text"] == "key *** 4"
    assert drain_traces(5)


def test_a_failed_trace_write_is_logged_and_later_traces_still_written(workspace, caplog):
    store = TraceStore(workspace)
    bad = store.write_later({"id": "not-a-trace-id"})  # trace_path refuses it in the writer
    good = store.write_later({"time": "2026-05-01T10:00:00"})
    with caplog.at_level(logging.WARNING):  # one line, not on the terminal chat's screen (ERROR is)
        assert store.drain(5)
    assert any(bad in r.getMessage() and r.exc_info is None for r in caplog.records)
    assert store.load(good)["id"] == good


def test_turn_returns_before_its_trace_is_written(bot_config, workspace, chat_server, make_agent):
    agent = make_agent(bot_config, workspace, background_traces=True)
    gate = threading.Event()
    agent.traces.write_later({"id": new_trace_id(), "time": "x"})  # warm the writer up
    assert agent.drain(5)
    # Hold the writer thread so the turn's trace must wait in the queue.
    from assistant_framework import traces as traces_module

    traces_module._WRITER.submit(lambda: gate.wait(10), "test hold")
    try:
        result = agent.handle(AgentMessage("c1", "hello"))
        assert result.ok and result.trace_id
        assert list((workspace.root / "traces").rglob(f"{result.trace_id}.json")) == []  # still queued
    finally:
        gate.set()
    assert agent.drain(5)
    assert TraceStore(workspace).load(result.trace_id)["reply"] == result.reply


def test_redacting_the_json_text_equals_redacting_the_values():
    import json

    from assistant_framework.traces import redact_json_text, redact_secrets

    secrets = sorted(['pa"ss\\word', "sk-ünïcode-1234", "tab\there"], key=len, reverse=True)
    doc = {
        "a": 'the key pa"ss\\word here',
        "nested": [{"sk-ünïcode-1234": "x sk-ünïcode-1234 y"}, "tab\there and tab\there"],
        "n": 3,
    }
    text = redact_json_text(json.dumps(doc, ensure_ascii=False), secrets)
    assert json.loads(text) == redact_secrets(doc, secrets)
    assert all(s not in json.loads(text)["a"] for s in secrets)


def test_pruning_lists_a_day_folder_only_once_its_last_kept_trace_may_be_gone(workspace, monkeypatch):
    """Each trace written prunes the oldest past ``keep``, and a day folder left empty goes. The folder is listed
    only when no kept trace is of its day: it was listed after every turn (a day of 200 traces read whole)."""
    listed: list[str] = []
    iterdir = Path.iterdir

    def counted(self: Path):
        listed.append(self.name)
        return iterdir(self)

    monkeypatch.setattr(Path, "iterdir", counted)
    store = TraceStore(workspace, keep=3)
    for day, minutes in ((1, range(6)), (2, range(3))):
        for minute in minutes:
            when = datetime(2026, 3, day, 10, minute, tzinfo=timezone.utc)
            store.write({"id": new_trace_id(when), "time": when.isoformat()})
        if day == 1:
            assert listed == []  # five traces pruned, the oldest kept one of their day each time
    assert listed == ["2026-03-01"]  # listed once, as its last trace went
    assert not workspace.exists("traces/2026-03-01") and len(store.ids()) == 3
