"""Collectors on schedule when the clock or the machine misbehaves: another process running the same
collector, the wall clock set back, a run that hangs. Real plugin folders, files, and the real CLI process."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from datetime import timezone

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.collectors.state import load_state
from assistant_framework.workspace import Workspace
from tests.fixtures.collectors.helpers import write_collector

UTC = timezone.utc

# Each run notes its start and end (with its process id) and waits, up to 8 s, for the test's go-ahead file.
SLOW = """
import os, time
DESCRIPTION = "Waits for the test."
INTERVAL_SECONDS = 600
def run(workspace, config):
    workspace.append_jsonl("collectors/slow/log.jsonl", {"pid": os.getpid(), "event": "start"})
    deadline = time.monotonic() + 8
    while not workspace.exists("collectors/slow/go") and time.monotonic() < deadline:
        time.sleep(0.02)
    workspace.append_jsonl("collectors/slow/log.jsonl", {"pid": os.getpid(), "event": "end"})
    return {"new_items": [{"title": "one item"}]}
"""


def setup(tmp_path, source=SLOW, name="slow", **collector_config):
    plugins = tmp_path / "plugins"
    write_collector(plugins, name, source)
    config_dir = tmp_path / "config"
    (config_dir / "collectors").mkdir(parents=True)
    (config_dir / "runtime.json").write_text(json.dumps({"collectors_dirs": [str(plugins)]}))
    (config_dir / "collectors" / f"{name}.json").write_text(json.dumps({"enabled": True, **collector_config}))
    ws = Workspace(tmp_path / "ws")
    manager = CollectorManager([plugins], {name: {"enabled": True, **collector_config}}, ws)
    manager.load()
    return config_dir, ws, manager


def cli_run(config_dir, ws, name="slow") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "messaging_llm_bot.cli", "collectors", "run", name]
        + ["--config", str(config_dir), "--workspace", str(ws.root)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_collectors_run_from_the_cli_while_the_bot_runs_it_runs_nothing(tmp_path):
    config_dir, ws, manager = setup(tmp_path)
    runner = CollectorRunner(manager, ws)  # the bot's runner, in this process
    outcomes = []
    bots_run = threading.Thread(target=lambda: outcomes.append(runner.run_once("slow")))
    bots_run.start()
    deadline = time.monotonic() + 10
    while not ws.read_jsonl("collectors/slow/log.jsonl") and time.monotonic() < deadline:
        time.sleep(0.02)
    cli = cli_run(config_dir, ws)
    ws.write_text("collectors/slow/go", "")
    bots_run.join(20)
    assert cli.returncode == 1, cli
    assert "running in another process" in cli.stdout and "Traceback" not in cli.stdout + cli.stderr
    log = ws.read_jsonl("collectors/slow/log.jsonl")
    assert [row["event"] for row in log] == ["start", "end"]  # one run, the bot's
    assert outcomes[0].outcome == "ok"
    assert load_state(ws, "slow").runs == 1
    # Once the bot's run is over, the command runs it.
    again = cli_run(config_dir, ws)
    assert again.returncode == 0, again
    assert load_state(ws, "slow").runs == 2
