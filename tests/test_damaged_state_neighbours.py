"""Damaged state in its neighbouring modes (issue 34.12): a busy index (another writer, not an exclusive
lock) is an error and never moved aside; a damaged id mark of another store than tasks, through the
Telegram bot's ``reminders`` skill, is moved aside and ids go on; a usage ledger line with bytes that
are not UTF-8 costs only itself in the Telegram bot's ``/stats``."""

from __future__ import annotations

import json
import logging
import sqlite3
from datetime import datetime, timezone

import pytest

from assistant_framework.memory import index_db
from assistant_framework.memory.index import MemoryIndex
from tests.telegram_harness import OWNER, texts


def test_a_busy_index_is_not_taken_for_a_broken_one(workspace, monkeypatch):
    # SQLite's busy timeout (5 s, tests/test_reliability_state.py) made short: the writer holds its lock until
    # the open failed, so every wait for it runs out.
    monkeypatch.setattr(index_db, "BUSY_TIMEOUT_SECONDS", 0.1)
    MemoryIndex(workspace).close()
    writer = sqlite3.connect(str(workspace.path("memory/index.sqlite3")), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another connection is writing: the index is busy, not broken
    try:
        with pytest.raises(sqlite3.OperationalError):
            MemoryIndex(workspace)
    finally:
        writer.close()
    assert workspace.list("memory/*.broken-*") == []
    MemoryIndex(workspace).close()  # and it opens again once the writer is done
    assert workspace.list("memory/*.broken-*") == []


def _remind(text: str) -> str:
    return json.dumps({"skill": "reminders", "args": {"action": "add", "text": text, "in_minutes": 600}})


def test_a_damaged_id_mark_of_the_reminders_is_moved_aside_through_the_bot(
    fake, start_bot, chat_server, workspace, caplog
):
    from assistant_framework.stores.reminders import ReminderStore

    caplog.set_level(logging.WARNING)
    start_bot()
    chat_server.enqueue(_remind("water the plants"), '{"reply": "first set"}')
    fake.send_message("remind me to water the plants", user_id=OWNER)
    fake.wait_for(lambda: any("first set" in t for t in texts(fake)), timeout=15)
    marks = workspace.list("state/ids/*.txt")
    assert len(marks) == 1 and "reminders" in marks[0]
    [first] = ReminderStore(workspace).pending()
    ReminderStore(workspace).cancel(first["id"])  # the last record gone: only the mark keeps its id used
    workspace.path(marks[0]).write_bytes(b"\xff\xfe\x00")  # bad bytes in a state file the store can do without
    chat_server.enqueue(_remind("call the plumber"), '{"reply": "second set"}')
    fake.send_message("remind me to call the plumber", user_id=OWNER)
    fake.wait_for(lambda: any("second set" in t for t in texts(fake)), timeout=15)
    [second] = ReminderStore(workspace).pending()
    assert second["text"] == "call the plumber" and second["id"] != first["id"]
    assert len(workspace.list("state/ids/*.broken-*")) == 1
    assert sum("moved aside" in r.getMessage() for r in caplog.records) == 1


def _usage_row(model: str) -> bytes:
    row = {
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "requests": [{"model": model, "elapsed_s": 1.0, "usage": {"prompt_tokens": 10, "completion_tokens": 5}}],
    }
    return json.dumps(row).encode("utf-8")


def test_a_usage_line_with_bytes_that_are_not_utf8_costs_only_itself_in_stats(fake, start_bot, workspace):
    ledger = workspace.path(f"state/usage/{datetime.now(timezone.utc):%Y-%m}.jsonl")
    ledger.parent.mkdir(parents=True, exist_ok=True)
    ledger.write_bytes(
        _usage_row("model-a") + b"\n" + b'{"time": "\xff\xfe", "requests": []}\n' + _usage_row("model-b")
    )
    start_bot()
    fake.send_message("/stats", user_id=OWNER)
    stats = fake.wait_for_messages(OWNER, 1)[0]["text"]
    assert "total: 2 msgs, 20 in" in stats and "model-a" in stats and "model-b" in stats, stats
