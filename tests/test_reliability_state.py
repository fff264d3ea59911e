"""Damaged caches and state files: moved aside, rebuilt, one warning, and the bot keeps answering.

End to end: the real bot (telegram harness) against FakeBotAPI and FakeChatServer, real files.
"""

from __future__ import annotations

import logging

import pytest

from tests.telegram_harness import OWNER, texts

GARBAGE = b"\xff\xfe this is not a database \x00\x81\xc3" * 64


def _memory_on(config: dict) -> None:
    config["memory"] = {"enabled": True}


def _warnings(caplog, word: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and word in r.getMessage()]


def test_broken_memory_index_is_moved_aside_rebuilt_and_the_bot_answers(fake, start_bot, workspace, caplog):
    workspace.write_text("notes/garden.md", "# Garden\n\nThe tomato seeds are in the blue box.\n")
    workspace.path("memory").mkdir(exist_ok=True)
    workspace.path("memory/index.sqlite3").write_bytes(GARBAGE)
    caplog.set_level(logging.INFO)
    bot = start_bot(config_patch=_memory_on)
    fake.send_message("where are the tomato seeds?")
    fake.wait_for_messages(OWNER, 1)
    assert texts(fake) == ["ok"]  # the default scripted answer: the turn ran
    aside = workspace.list("memory/index.sqlite3.broken-*")
    assert len(aside) == 1 and workspace.path(aside[0]).read_bytes() == GARBAGE  # kept for a human
    warned = _warnings(caplog, "index.sqlite3")
    assert len(warned) == 1 and aside[0] in warned[0]
    # The new index is refilled from the files without anyone running `memory reindex`.
    memory = bot.runtime.memory
    fake.wait_for(lambda: any(h.path == "notes/garden.md" for h in memory.search("tomato seeds")))


def test_seen_log_with_bad_bytes_keeps_its_readable_ids(fake, start_bot, workspace, caplog):
    workspace.path("state/inbox").mkdir(parents=True, exist_ok=True)
    workspace.path("state/inbox/seen.log").write_bytes(b"77\n\xff\xfe\x00\x81garbage\n78\n")
    caplog.set_level(logging.INFO)
    start_bot()
    fake.push_update(
        {
            "update_id": 78,
            "message": {
                "message_id": 1,
                "date": 1700000000,
                "text": "already answered before the damage",
                "chat": {"id": OWNER, "type": "private", "first_name": "Owner"},
                "from": {"id": OWNER, "is_bot": False, "first_name": "Owner"},
            },
        }
    )
    new = fake.send_message("a new message")
    fake.wait_for_messages(OWNER, 1)
    fake.wait_for(lambda: not workspace.list("state/inbox/pending/*/*.json"))
    assert texts(fake) == ["ok"]  # the new message answered, update 78 (still seen) not again
    aside = workspace.list("state/inbox/seen.log.broken-*")
    assert len(aside) == 1 and b"\xff\xfe" in workspace.path(aside[0]).read_bytes()
    ids = [line.split()[0] for line in workspace.read_text("state/inbox/seen.log").splitlines()]
    assert ids == ["77", "78", str(new["update_id"])]
    warned = _warnings(caplog, "seen.log")
    assert len(warned) == 1 and aside[0] in warned[0]


def test_a_locked_index_is_not_taken_for_a_broken_one(workspace, monkeypatch):
    import sqlite3

    from assistant_framework.memory import index_db
    from assistant_framework.memory.index import MemoryIndex

    # SQLite's busy timeout (5 s: test_the_index_waits_for_a_busy_database_as_long_as_sqlite) made short, as the
    # lock is held for the whole test and every wait for it runs out.
    monkeypatch.setattr(index_db, "BUSY_TIMEOUT_SECONDS", 0.1)
    MemoryIndex(workspace).close()
    holder = sqlite3.connect(str(workspace.path("memory/index.sqlite3")), isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the index
    try:
        with pytest.raises(sqlite3.OperationalError):
            MemoryIndex(workspace)
    finally:
        holder.close()
    assert workspace.list("memory/*.broken-*") == []  # a good index is never moved aside for a lock


def test_the_index_waits_for_a_busy_database_as_long_as_sqlite(workspace):
    from assistant_framework.memory.index import MemoryIndex

    index = MemoryIndex(workspace)
    try:  # another writer's short transaction is waited for, 5 s at most, before the open fails
        assert index.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    finally:
        index.close()
