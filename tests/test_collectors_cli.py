"""The ``collectors`` CLI in-process: list, run, status, run-loop, setup."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

from assistant_framework.collectors.runner import MAX_LOOP_SLEEP
from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests.fixtures.collectors.helpers import write_collector

COUNTER = """
DESCRIPTION = "Counts runs."
FILE_STRUCTURE = "count.txt"
GENERATED_FILES = ["collectors/counter/count.txt"]
INTERVAL_SECONDS = 3600
def run(workspace, config):
    n = int(workspace.read_text("collectors/counter/count.txt", default="0")) + 1
    workspace.write_text("collectors/counter/count.txt", str(n))
    return {"new_items": [{"title": f"count is {n}"}], "summary": f"counted to {n}"}
def setup(config, workspace):
    print("setting up counter with", config.get("start", 0))
    return 0
"""

FAILER = """
DESCRIPTION = "Fails."
INTERVAL_SECONDS = 60
def run(workspace, config):
    raise ValueError("upstream said no")
"""

TYPED = """
DESCRIPTION = "Has a schema."
INTERVAL_SECONDS = 60
CONFIG_SCHEMA = {"type": "object", "properties": {"limit": {"type": "integer"}}}
def run(workspace, config):
    pass
"""


@pytest.fixture
def setup_dirs(tmp_path):
    plugins = tmp_path / "plugins"
    write_collector(plugins, "counter", COUNTER)
    write_collector(plugins, "failer", FAILER)
    write_collector(plugins, "typed", TYPED)
    config_dir = tmp_path / "config"
    (config_dir / "collectors").mkdir(parents=True)
    (config_dir / "runtime.json").write_text(
        json.dumps({"timezone": "Europe/Berlin", "collectors_dirs": [str(plugins)]})
    )
    (config_dir / "collectors" / "counter.json").write_text(json.dumps({"enabled": True, "start": 7}))
    (config_dir / "collectors" / "failer.json").write_text(json.dumps({"enabled": True}))
    (config_dir / "collectors" / "typed.json").write_text(json.dumps({"enabled": True, "limit": "ten"}))
    Workspace(tmp_path / "ws")  # as the bot or `assistant setup` lays it out; the CLI never creates one
    return ["--config", str(config_dir), "--workspace", str(tmp_path / "ws")], tmp_path


def test_list_shows_builtins_plugins_and_file_named_config_errors(setup_dirs, capsys):
    opts, _ = setup_dirs
    assert main(["collectors", "list", *opts]) == 1  # typed failed to load: a failure found
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert any(
        line.startswith("counter") and "enabled" in line and "every 3600s" in line and "Counts runs." in line
        for line in lines
    )
    assert any(line.startswith("rss") and "disabled" in line for line in lines)
    assert any(line.startswith("mail") for line in lines) and any(line.startswith("calendar") for line in lines)
    assert any(line.startswith("typed") and "FAILED" in line and "collectors.typed.limit" in line for line in lines)
    assert any(line.startswith("config: ") and "typed.json: limit:" in line for line in lines)


def test_run_prints_what_it_wrote_and_status_shows_the_state(setup_dirs, capsys):
    opts, tmp_path = setup_dirs
    assert main(["collectors", "run", "counter", *opts]) == 0
    out = capsys.readouterr().out
    assert "counter: ok in" in out and "1 new item(s)" in out
    assert "wrote:\n  collectors/counter/count.txt\n" in out
    assert "  + count is 1" in out
    assert (tmp_path / "ws" / "collectors" / "counter" / "count.txt").read_text() == "1"

    assert main(["collectors", "run", "failer", *opts]) == 1
    out = capsys.readouterr().out
    assert "failer: error" in out and "upstream said no" in out

    assert main(["collectors", "status", *opts]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert out.splitlines()[0].split()[:3] == ["name", "enabled", "outcome"]
    assert " ok " in rows["counter"] and rows["counter"].split()[1] == "yes"
    assert " error " in rows["failer"] and "upstream said no" in rows["failer"]
    assert rows["failer"].split()[8] == "1"  # consecutive failures
    assert "never run" in rows["rss"]
    assert "load-error" in rows["typed"]


def test_run_unknown_exits_2_and_failed_collector_exits_1(setup_dirs, capsys):
    opts, _ = setup_dirs
    assert main(["collectors", "run", "nope", *opts]) == 2
    assert "no collector named 'nope'" in capsys.readouterr().err
    assert main(["collectors", "run", "typed", *opts]) == 1
    assert "failed to load" in capsys.readouterr().err


def test_setup_calls_the_collectors_setup(setup_dirs, capsys):
    opts, _ = setup_dirs
    assert main(["collectors", "setup", "counter", *opts]) == 0
    assert "setting up counter with 7" in capsys.readouterr().out
    assert main(["collectors", "setup", "failer", *opts]) == 0
    assert "needs no interactive setup" in capsys.readouterr().out


@pytest.mark.parametrize("to", ["the process", "another thread"])
def test_run_loop_runs_due_collectors_and_ctrl_c_exits_0(setup_dirs, capsys, ctrl_c, to):
    """Ctrl-C stops the loop at once, also when the kernel hands the signal to a thread other than the main one
    (then only Python's flag is set, which the main thread reads when its wait returns): the loop's pause until
    the next run is up to 30 s, and the loop ends well before it."""
    opts, tmp_path = setup_dirs
    marker = tmp_path / "ws" / "collectors" / "counter" / "count.txt"
    sent: list[float] = []

    def interrupt_when_done() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not marker.exists():
            time.sleep(0.02)
        time.sleep(0.3)  # the loop back in its pause
        sent.append(time.monotonic())
        if to == "the process":
            os.kill(os.getpid(), signal.SIGINT)
        else:
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    thread = threading.Thread(target=interrupt_when_done, daemon=True)
    thread.start()
    assert main(["collectors", "run-loop", *opts]) == 0
    stopped = time.monotonic()
    thread.join(5)
    out = capsys.readouterr().out
    assert "running collectors counter, failer" in out and "stopped" in out
    assert marker.read_text() == "1"
    assert stopped - sent[0] < MAX_LOOP_SLEEP / 3  # not at the pause's end


def test_status_shows_per_source_failures(tmp_path, capsys):
    from pathlib import Path

    from tests.fakes.feed_server import StaticHTTPServer

    good = (Path(__file__).parent / "fixtures" / "collectors" / "news_rss2.xml").read_bytes()
    config_dir = tmp_path / "config"
    (config_dir / "collectors").mkdir(parents=True)
    (config_dir / "runtime.json").write_text(json.dumps({"timezone": "Europe/Berlin"}))
    Workspace(tmp_path / "ws")  # the CLI never creates one
    opts = ["--config", str(config_dir), "--workspace", str(tmp_path / "ws")]
    with StaticHTTPServer() as server:
        server.add("/news.xml", good, content_type="application/rss+xml")
        server.add("/gone.xml", b"gone", status=410)
        feeds = [server.url("/news.xml"), server.url("/gone.xml"), server.url("/missing.xml")]
        (config_dir / "collectors" / "rss.json").write_text(json.dumps({"enabled": True, "feeds": feeds}))
        assert main(["collectors", "run", "rss", *opts]) == 0
        capsys.readouterr()
        assert main(["collectors", "status", *opts]) == 0
        rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
        assert " ok " in rows["rss"] and " 2/3 " in rows["rss"]

        assert main(["collectors", "status", "rss", *opts]) == 0
        out = capsys.readouterr().out
        assert "2 of 3 source(s) failing" in out
        assert f"  {feeds[1]}: failed 1 run(s) in a row, never ok\n    feed {feeds[1]}: HTTP 410" in out
        assert f"feed {feeds[2]}: HTTP 404" in out and f"{feeds[0]}:" not in out

        assert main(["collectors", "status", "rss", "--json", *opts]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["name"] == "rss" and data["failing_sources"] == 2
        assert data["sources"][feeds[0]]["ok"] is True and data["sources"][feeds[0]]["items"] == 2
        assert data["sources"][feeds[2]] | {"last_error_at": None} == {
            "ok": False,
            "last_ok": None,
            "last_error": f"feed {feeds[2]}: HTTP 404",
            "last_error_at": None,
            "failures": 1,
        }

        # The next run: the missing feed is back; the gone one fails a second time.
        server.add("/missing.xml", good, content_type="application/rss+xml")
        assert main(["collectors", "run", "rss", *opts]) == 0
        capsys.readouterr()
        assert main(["collectors", "status", "--json", *opts]) == 0
        rss = next(r for r in json.loads(capsys.readouterr().out) if r["name"] == "rss")
        assert (
            rss["failing_sources"] == 1
            and rss["sources"][feeds[1]]["failures"] == 2
            and rss["sources"][feeds[2]]["ok"] is True
        )
    assert main(["collectors", "status", "nope", *opts]) == 2  # an unknown name is a usage error
