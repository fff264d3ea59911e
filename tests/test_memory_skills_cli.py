"""The memory skills through their run functions, and the memory CLI in-process."""

from __future__ import annotations

import importlib
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from assistant_framework.memory import MemoryService
from assistant_framework.skills import SkillContext
from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main

UTC = timezone.utc
ROOT = Path(__file__).resolve().parent.parent
memory_search = importlib.import_module("skills.memory_search")
conversation_search = importlib.import_module("skills.conversation_search")


@pytest.fixture
def ws(tmp_path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    svc = MemoryService(ws, {}, start_worker=False)
    svc.log_turn("100", "user", "The spare key is under the blue flowerpot", time=datetime(2026, 4, 2, 9, tzinfo=UTC))
    svc.log_turn("100", "user", "Dentist appointment moved to Friday", time=datetime(2026, 5, 3, 9, tzinfo=UTC))
    svc.log_turn("-200", "user", "Group chat: the key to success is practice", time=datetime(2026, 5, 3, 9, tzinfo=UTC))
    svc.close()
    ws.write_text("notes/house.md", "# House\n\nThe spare key for the shed hangs in the hallway.\n")
    ws.append_jsonl(
        "collectors/rss/items.jsonl", {"title": "Key rotation best practices", "published": "2026-05-01T08:00:00Z"}
    )
    return ws


def _ctx(conversation: str, chat, user, memory=None, owner=100) -> SkillContext:
    services = {"memory": memory} if memory is not None else {}
    # The bot marks only the owner's own private chat as private.
    return SkillContext(
        conversation_id=conversation,
        chat_id=chat,
        user_id=user,
        config={},
        timezone="UTC",
        services=services,
        private=chat == user == owner,
    )


def test_memory_search_skill_private_chat_without_service(ws):
    out = memory_search.run(ws, {"query": "spare key"}, _ctx("100", 100, 100))
    assert "under the blue flowerpot" in out and "hangs in the hallway" in out
    assert "success is practice" not in out  # another chat's turns are never shown
    assert "conversations/100/2026-04-02.jsonl" in out


def test_memory_search_skill_source_filter_and_service_from_context(ws):
    svc = MemoryService(ws, {}, start_worker=False)
    try:
        svc.refresh()
        out = memory_search.run(ws, {"query": "key", "source": "collector:rss"}, _ctx("100", 100, 100, svc))
        assert out.startswith("- [collector:rss, 2026-05-01") and out.count("\n") == 0
    finally:
        svc.close()


def test_memory_search_skill_group_chat_sees_only_its_turns(ws):
    out = memory_search.run(ws, {"query": "key"}, _ctx("-200", -200, 100))
    assert "success is practice" in out
    assert "flowerpot" not in out and "hallway" not in out and "rotation" not in out


def test_memory_search_skill_no_match_says_how_to_retry(ws):
    out = memory_search.run(ws, {"query": "zeppelin"}, _ctx("100", 100, 100))
    assert out.startswith("No memory matches 'zeppelin'") and "other words" in out


def test_conversation_search_skill_dates_and_boundaries(ws):
    ctx = _ctx("100", 100, 100)
    out = conversation_search.run(ws, {"query": "key dentist", "since": "2026-05-01"}, ctx)
    assert "Dentist" in out and "flowerpot" not in out
    out = conversation_search.run(ws, {"query": "key dentist", "until": "2026-04-02"}, ctx)
    assert "flowerpot" in out and "Dentist" not in out  # until is inclusive of the day
    assert "hallway" not in conversation_search.run(ws, {"query": "spare key"}, ctx)  # turns only
    # The owner may look into another chat from the private chat; a group may not.
    assert "success" in conversation_search.run(ws, {"query": "key", "conversation": "-200"}, ctx)
    with pytest.raises(ValueError, match="private chat"):
        conversation_search.run(ws, {"query": "key", "conversation": "100"}, _ctx("-200", -200, 100))
    with pytest.raises(ValueError, match="since"):
        conversation_search.run(ws, {"query": "key", "since": "last tuesday"}, ctx)


@pytest.mark.parametrize("name", ["memory_search", "conversation_search"])
def test_skill_readme_matches_schema(name):
    module = importlib.import_module(f"skills.{name}")
    readme = (ROOT / "skills" / name / "README.md").read_text(encoding="utf-8")
    for heading in ("## What it does", "## Args schema", "## Examples"):
        assert heading in readme
    block = re.search(r"## Args schema\s+```json\n(.*?)\n```", readme, re.S).group(1)
    assert json.loads(block) == module.ARGS_SCHEMA


def test_cli_search_stats_reindex_purge(ws, capsys):
    base = ["--workspace", str(ws.root), "--config", str(ws.root / "no-config")]
    assert main(["memory", "search", "spare key", *base]) == 0
    out = capsys.readouterr().out
    assert "conversations/100/2026-04-02.jsonl" in out and "notes/house.md" in out

    assert main(["memory", "search", "key", "--source", "notes", "--json", *base]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert [h["source"] for h in hits] == ["notes"] and hits[0]["ref"].startswith("L")

    assert main(["memory", "search", "zeppelin", *base]) == 1
    assert "no memory matches" in capsys.readouterr().out
    assert main(["memory", "search", "zeppelin " * 5000, *base]) == 1  # a pasted page: not echoed whole
    assert len(capsys.readouterr().out) < 200
    assert main(["memory", "search", "zeppelin", "--json", *base]) == 1  # the same exit code as text mode
    assert json.loads(capsys.readouterr().out) == []

    assert main(["memory", "stats", *base]) == 0
    out = capsys.readouterr().out
    assert re.search(r"conversation\s+3", out) and re.search(r"collector:rss\s+1", out)

    assert main(["memory", "reindex", *base]) == 0
    assert "reindexed 5 entries from 5 files" in capsys.readouterr().out

    assert main(["memory", "purge", "--source", "collector:rss", *base]) == 0
    assert "purged collector:rss: 1 files, 1 index entries" in capsys.readouterr().out
    assert not ws.exists("collectors/rss/items.jsonl")
    assert main(["memory", "search", "rotation", *base]) == 1
    capsys.readouterr()
    assert main(["memory", "purge", "--source", "notes", *base]) == 2
    assert main(["memory", "purge", "--source", "collector:../x", *base]) == 2


def test_cli_reads_the_config(ws, tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"memory": {"recall": {"limit": 2}}}))
    assert (
        main(
            ["memory", "search", "key", "--json", "--limit", "1", "--workspace", str(ws.root), "--config", str(config)]
        )
        == 0
    )
    assert len(json.loads(capsys.readouterr().out)) == 1
    config.write_text(json.dumps({"memory": {"semantic_weight": -1}}))  # against the schema
    assert main(["memory", "search", "key", "--workspace", str(ws.root), "--config", str(config)]) == 2
    assert "config error" in capsys.readouterr().err


def test_another_allowed_users_private_chat_sees_neither_owner_data_nor_other_chats(ws):
    guest = _ctx("300", 300, 300)  # allowed, private chat, but not the owner
    with pytest.raises(ValueError, match="private chat with the owner"):
        conversation_search.run(ws, {"query": "key", "conversation": "100"}, guest)
    out = memory_search.run(ws, {"query": "spare key"}, guest)
    assert "hangs in the hallway" not in out and "under the blue flowerpot" not in out


def test_skill_prefixed_source_names_reach_builtin_skill_data(ws):
    out = memory_search.run(ws, {"query": "spare key", "source": "skill:notes"}, _ctx("100", 100, 100))
    assert "hangs in the hallway" in out
    assert "under the blue flowerpot" not in out  # the conversation source is excluded
