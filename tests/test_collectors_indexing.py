"""A collector run hands the files it wrote to the memory index (issue 27.6): its new items are
searchable as soon as the run ends, through the real CLI (``collectors run`` then ``memory search``)
and in the running bot (the ``memory_search`` skill right after a scheduled run), not after the
index's idle refresh a minute later."""

from __future__ import annotations

import json
from pathlib import Path

from assistant_framework.collectors.state import load_state
from assistant_framework.config.settings import Settings
from assistant_framework.memory.index import MemoryIndex
from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests.cli_inprocess import CliRun, run_cli
from tests.fixtures.collectors.helpers import write_collector
from tests.telegram_harness import OWNER

# Each run writes items.jsonl; a run with ``drop`` in the workspace removes it again.
NEWS = """
DESCRIPTION = "Local news."
INTERVAL_SECONDS = 3600
def run(workspace, config):
    if workspace.exists("notes/drop.md"):
        workspace.delete("collectors/news/items.jsonl")
        return {"summary": "dropped"}
    item = {"title": "Zeppelin festival moved to Tuesday", "untrusted": True}
    workspace.append_jsonl("collectors/news/items.jsonl", item)
    return {"new_items": [item], "summary": "one item"}
"""


def _config(tmp_path: Path, memory: dict | None = None) -> Path:
    plugins = tmp_path / "plugins"
    write_collector(plugins, "news", NEWS)
    config = tmp_path / "config.json"
    body = {
        "runtime": {"timezone": "UTC", "collectors_dirs": [str(plugins)]},
        "collectors": {"news": {"enabled": True}},
        **({"memory": memory} if memory is not None else {}),
    }
    config.write_text(json.dumps(body), encoding="utf-8")
    return config


def _cli(*args: str) -> CliRun:
    """The command in this process (tests/cli_inprocess.py)."""
    return run_cli(*args)


def _indexed(workspace: Workspace, word: str) -> list[str]:
    """Paths of index rows holding ``word``, read without any refresh (what the run itself put there)."""
    index = MemoryIndex(workspace)
    try:
        return [row[0] for row in index.query("SELECT path FROM entries WHERE text LIKE ?", (f"%{word}%",))]
    finally:
        index.close()


def test_collectors_run_indexes_what_it_wrote_and_memory_search_finds_it(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    opts = ["--config", str(_config(tmp_path)), "--workspace", str(workspace.root)]
    ran = _cli("collectors", "run", "news", *opts)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # In the index when the run's process has ended: nobody walked the folders since.
    assert "collectors/news/items.jsonl" in _indexed(workspace, "Zeppelin")
    found = _cli("memory", "search", "zeppelin festival", "--json", *opts)
    assert found.returncode == 0, found.stdout + found.stderr
    hits = json.loads(found.stdout)
    assert any(h["path"] == "collectors/news/items.jsonl" and "Tuesday" in h["snippet"] for h in hits)

    # A run that removes a file takes its rows out of the index as it ends (the same CLI, in-process).
    workspace.write_text("notes/drop.md", "drop it")
    assert main(["collectors", "run", "news", *opts]) == 0
    assert "collectors/news/items.jsonl" not in _indexed(workspace, "Zeppelin")


def test_collectors_run_with_memory_off_makes_no_index(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    opts = ["--config", str(_config(tmp_path, memory={"enabled": False})), "--workspace", str(workspace.root)]
    assert main(["collectors", "run", "news", *opts]) == 0
    assert workspace.exists("collectors/news/items.jsonl")
    assert not workspace.exists("memory/index.sqlite3")


def test_the_bot_finds_a_scheduled_runs_item_with_memory_search_right_after(fake, start_bot, chat_server, tmp_path):
    plugins = tmp_path / "plugins"
    write_collector(plugins, "news", NEWS)

    def patch(config: dict) -> None:
        # Memory on with its default idle refresh (60 s); no recall and no fact extraction to script.
        config["memory"] = {"recall": {"enabled": False}, "extract_facts": False}
        config["runtime"]["collectors_dirs"] = [str(plugins)]
        config["collectors"] = {"news": {"enabled": True}}  # an interval collector's first run is at once

    # No status line: a loaded machine may take longer than its grace for the search, and the first message
    # would be "🔎 memory_search…" edited into the reply; the reply is what this test reads.
    bot = start_bot(config_patch=patch, progress=False)
    workspace = bot.runtime.workspace
    fake.wait_for(lambda: load_state(workspace, "news").last_end)  # the scheduled run has ended
    chat_server.enqueue(
        json.dumps({"skill": "memory_search", "args": {"query": "zeppelin festival"}}),
        '{"reply": "It moved to Tuesday."}',
    )
    fake.send_message("when is the zeppelin festival?")
    assert fake.wait_for_messages(OWNER, 1)[0]["text"] == "It moved to Tuesday."
    fed_back = chat_server.chat_requests[1]["messages"][-1]["content"]
    assert "Zeppelin festival moved to Tuesday" in fed_back, fed_back


def test_the_runner_hands_written_and_removed_files_to_its_indexer(ws, tmp_path):
    """The runner's side of the seam: every file a run wrote or removed, and the runner's own two."""
    from assistant_framework.collectors import CollectorManager, CollectorRunner

    handed: list[list[str]] = []

    class Recorder:
        def index_files(self, paths):
            handed.append(list(paths))
            return len(paths)

    plugins = tmp_path / "plugins"
    write_collector(plugins, "news", NEWS)
    config = {"runtime": {"collectors_dirs": [str(plugins)]}, "collectors": {"news": {"enabled": True}}}
    runner = CollectorRunner(
        CollectorManager.from_settings(Settings.from_config(config).runtime, config.get("collectors"), ws),
        ws,
        indexer=Recorder(),
    )
    assert runner.run_once("news").outcome == "ok"
    ws.write_text("notes/drop.md", "drop it")
    assert runner.run_once("news").outcome == "ok"
    own = ["collectors/news/new.json", "collectors/news/runs.jsonl"]
    assert handed == [["collectors/news/items.jsonl", *own], ["collectors/news/items.jsonl", *own]]
