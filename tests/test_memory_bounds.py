"""A memory search is bounded (issue 26.8): its query's length, its words and CJK pieces, and its time.

Before: a query of many short CJK words scanned every CJK row once per word (about 11 s on a real
workspace), a query of hundreds of words OR-ed them all, and nothing stopped a slow search; recall
runs one before every answer, with the user's whole message as its query. Now the first
MAX_QUERY_CHARS characters are read, the first MAX_QUERY_TERMS words and MAX_SHORT/MAX_SUBSTRINGS
CJK pieces are looked up (the short ones in one scan), and the index queries of one search stop
at ``MemoryService.search_time_limit_seconds``; a search cut there says so.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from assistant_framework.memory.cjk import MAX_SHORT
from assistant_framework.memory.readers import QueryTimeout, ReaderPool, time_limit
from assistant_framework.memory.search import MAX_QUERY_CHARS
from assistant_framework.memory.terms import MAX_QUERY_TERMS
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.cli.main import main
from tests.telegram_harness import OWNER, texts

# Two-character CJK words, all different: word n is chr(0x4E00 + 2n) + chr(0x4E01 + 2n).
WORDS = [chr(0x4E00 + 2 * n) + chr(0x4E01 + 2 * n) for n in range(200)]
FIRST, LATE = WORDS[0], WORDS[150]


def _cjk_notes(ws: Workspace) -> None:
    ws.write_text("notes/first.md", f"# 記録\n\n倉庫の{FIRST}は青い箱の中。\n")
    ws.write_text("notes/late.md", f"# 記録\n\n台所の{LATE}は棚の上。\n")
    for n in range(30):  # other CJK rows the scan walks past
        ws.write_text(f"notes/other-{n}.md", f"# 雑記\n\n今日は{'雨' * (n % 5 + 1)}でした。\n")


def test_a_query_of_hundreds_of_short_cjk_words_looks_up_only_its_first_ones(tmp_path, capsys):
    ws = Workspace(tmp_path / "ws")
    _cjk_notes(ws)
    query = " ".join(WORDS)  # 200 words: one scan of every CJK row each, before
    base = ["--workspace", str(ws.root), "--config", str(tmp_path / "no-config")]
    assert main(["memory", "search", query, "--json", *base]) == 0
    paths = {hit["path"] for hit in json.loads(capsys.readouterr().out)}
    assert "notes/first.md" in paths
    assert "notes/late.md" not in paths  # word 151 is past the MAX_SHORT looked up
    assert WORDS.index(LATE) >= MAX_SHORT


def test_recall_of_a_long_cjk_message_is_bounded_through_the_bot(fake, start_bot, chat_server, workspace):
    """Recall searches with the user's whole message before every answer: a message of 200 short
    words is answered, and recall looked up its first words only."""
    from assistant_framework.memory import MemoryService

    _cjk_notes(workspace)
    indexed = MemoryService(workspace, {}, start_worker=False)  # a workspace the bot has indexed before
    indexed.refresh()
    indexed.close()

    def memory_on(config):
        config["memory"] = {
            "enabled": True,
            "extract_facts": False,
            "episodes": False,
            "profile": False,
            "recall": {"enabled": True, "skip_recent_turns": 0},
        }

    start_bot(config_patch=memory_on)
    chat_server.enqueue('{"reply": "見ました"}')
    fake.send_message(" ".join(WORDS), user_id=OWNER)
    fake.wait_for(lambda: "見ました" in texts(fake, OWNER), timeout=20)
    asked = chat_server.chat_requests[-1]["messages"][-1]["content"]
    assert "[Recalled memory" in asked and "青い箱" in asked
    assert "棚の上" not in asked


#: A 3,000-character CJK message without spaces (as Chinese and Japanese are written): all different
#: characters, so that none of its trigrams repeats.
LONG_CJK = "".join(chr(0x6000 + n) for n in range(3000))


def test_recall_of_a_3000_character_cjk_message_is_bounded_through_the_bot(fake, start_bot, chat_server, workspace):
    """A 3,000-character CJK message to the bot is answered, and its recall looked up only the start of it:
    the first MAX_SUBSTRINGS trigrams of its first MAX_QUERY_CHARS characters. A note holding its first
    characters is recalled; notes holding characters 500 and 2,500 on are not (every trigram of the message
    would be one lookup each, before every answer)."""
    from assistant_framework.memory import MemoryService
    from assistant_framework.memory.cjk import MAX_SUBSTRINGS

    assert MAX_SUBSTRINGS + 2 < 500 < MAX_QUERY_CHARS < 2500
    workspace.write_text("notes/start.md", f"# 記録\n\n{LONG_CJK[:6]}は青い箱の中。\n")
    workspace.write_text("notes/middle.md", f"# 記録\n\n{LONG_CJK[500:506]}は棚の上。\n")
    workspace.write_text("notes/end.md", f"# 記録\n\n{LONG_CJK[2500:2506]}は机の下。\n")
    for n in range(30):  # other CJK rows
        workspace.write_text(f"notes/other-{n}.md", f"# 雑記\n\n今日は{'雨' * (n % 5 + 1)}でした。\n")
    indexed = MemoryService(workspace, {}, start_worker=False)  # a workspace the bot has indexed before
    indexed.refresh()
    indexed.close()

    def memory_on(config):
        config["memory"] = {
            "enabled": True,
            "extract_facts": False,
            "episodes": False,
            "profile": False,
            "recall": {"enabled": True, "skip_recent_turns": 0},
        }

    start_bot(config_patch=memory_on)
    chat_server.enqueue('{"reply": "読みました"}')
    fake.send_message(LONG_CJK, user_id=OWNER)
    fake.wait_for(lambda: "読みました" in texts(fake, OWNER), timeout=30)
    asked = chat_server.chat_requests[-1]["messages"][-1]["content"]
    assert LONG_CJK[:100] in asked  # the message itself reached the model
    assert "[Recalled memory" in asked and "青い箱" in asked
    assert "棚の上" not in asked and "机の下" not in asked


def _ask_memory_search(agent, chat_server, query: str) -> str:
    chat_server.enqueue(json.dumps({"skill": "memory_search", "args": {"query": query}}), '{"reply": "done"}')
    agent.handle(AgentMessage("c1", "look it up"))
    return str(chat_server.chat_requests[-1]["messages"][-1]["content"])


def test_a_query_of_many_words_looks_up_only_its_first_ones_through_the_skill(memory_agent, chat_server):
    agent, memory, workspace = memory_agent
    words = [f"lemma{n:03d}" for n in range(100)]
    workspace.write_text("notes/early.md", f"# Early\n\nThe {words[0]} is in the attic.\n")
    workspace.write_text("notes/later.md", f"# Later\n\nThe {words[80]} is in the cellar.\n")
    memory.refresh()
    result = _ask_memory_search(agent, chat_server, " ".join(words))
    assert "attic" in result and "cellar" not in result  # word 81 is past MAX_QUERY_TERMS
    assert 80 >= MAX_QUERY_TERMS


def test_only_the_start_of_a_pasted_page_is_searched(memory_agent, chat_server):
    agent, memory, workspace = memory_agent
    workspace.write_text("notes/pantry.md", "# Pantry\n\nThe saffron tin is behind the flour.\n")
    memory.refresh()
    page = "x " * 600 + "saffron"  # 'saffron' at character 1,200
    assert MAX_QUERY_CHARS < 1200
    assert "saffron" not in _ask_memory_search(agent, chat_server, page)
    assert "saffron tin" in _ask_memory_search(agent, chat_server, "saffron " + page)


def test_a_search_cut_at_its_time_limit_says_so_through_the_skill(memory_agent, chat_server):
    agent, memory, workspace = memory_agent
    workspace.write_text("notes/pantry.md", "# Pantry\n\nThe saffron tin is behind the flour.\n")
    memory.refresh()
    memory.search_time_limit_seconds = 0.0  # every index query is past the limit
    result = _ask_memory_search(agent, chat_server, "saffron")
    assert "stopped at its time limit" in result and "saffron tin" not in result
    memory.search_time_limit_seconds = 2.0
    assert "saffron tin" in _ask_memory_search(agent, chat_server, "saffron")


LONG_QUERY = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000) SELECT count(*) FROM c"
)


def test_the_time_limit_interrupts_a_running_read_in_every_reader(tmp_path):
    """A query already running is interrupted (not only one that has not started), also on the
    pool's other threads (``query_many``); the connections work afterwards."""
    db = tmp_path / "index.sqlite3"
    sqlite3.connect(db).close()
    pool = ReaderPool(db, parallel=2, parallel_from=0)  # the second query on the pool's thread, however small
    try:
        with time_limit(0.05), pytest.raises(QueryTimeout):
            pool.query(LONG_QUERY)
        with time_limit(0.05), pytest.raises(QueryTimeout):
            pool.query_many([("SELECT 1", ()), (LONG_QUERY, ())])
        assert pool.query_many([("SELECT 1", ()), ("SELECT 2", ())]) == [[(1,)], [(2,)]]
    finally:
        pool.close()
