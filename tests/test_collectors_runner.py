"""CollectorManager loading and CollectorRunner scheduling, with real plugin folders and files."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.collectors.outcome import RUNS_CAP
from assistant_framework.collectors.state import load_state
from assistant_framework.schedules import backoff_seconds, from_iso
from tests.fixtures.collectors.helpers import FakeClock, write_collector

UTC = timezone.utc

WRITER = """
import json
def register_collector(config):
    def run(workspace):
        n = len(workspace.read_jsonl("collectors/writer/items.jsonl"))
        workspace.append_jsonl("collectors/writer/items.jsonl", {"n": n})
        workspace.write_text("collectors/writer/latest.md", f"# run {n}\\n")
        return {"new_items": [{"title": f"item {n}", "from": "boss@example.org"}], "summary": f"run {n}"}
    return {
        "name": "writer",
        "description": "Writes a counter.",
        "interval_seconds": 60,
        "generated_files": ["collectors/writer/latest.md", "collectors/writer/items.jsonl"],
        "file_structure": "latest.md holds the last run; items.jsonl one line per run.",
        "run": run,
    }
"""

RAISER = """
DESCRIPTION = "Always fails."
FILE_STRUCTURE = "nothing"
GENERATED_FILES = []
INTERVAL_SECONDS = 60
def run(workspace, config):
    raise RuntimeError("feed server exploded")
"""

OLD_FORM = """
def create_collector(config):
    return {"description": "Old form.", "cron": "0 7 * * *", "generated_files": ["collectors/old/x.md"],
            "file_structure": "x.md",
            "run": lambda ws: ws.write_text("collectors/old/x.md", config.get("greeting", "hi"))}
"""

CONSTANTS_WITH_CONFIG = """
DESCRIPTION = "Constants form taking config."
FILE_STRUCTURE = "out.txt"
GENERATED_FILES = ["collectors/consts/out.txt"]
INTERVAL_SECONDS = 300
CONFIG_SCHEMA = {"type": "object", "properties": {"word": {"type": "string"}}, "additionalProperties": False}
def run(workspace, config):
    workspace.write_text("collectors/consts/out.txt", config["word"])
"""


# The hanging collector blocks on these module-level events, so the test can release it.
HANGER = """
INTERVAL_SECONDS = 60
DESCRIPTION = "Hangs until released."
def run(workspace, config):
    import tests.test_collectors_runner as t
    t.HANG_STARTED.set()
    t.HANG_RELEASE.wait(30)
"""


HANG_RELEASE = threading.Event()
HANG_STARTED = threading.Event()


@pytest.fixture
def plugins(tmp_path):
    base = tmp_path / "plugins"
    write_collector(base, "writer", WRITER)
    write_collector(base, "raiser", RAISER)
    write_collector(base, "old", OLD_FORM)
    write_collector(base, "consts", CONSTANTS_WITH_CONFIG)
    return base


def manager_for(base, ws, config):
    manager = CollectorManager([base], config, ws)
    manager.load()
    return manager


def test_loads_all_three_forms_and_isolates_broken_ones(tmp_path, ws, plugins):
    write_collector(plugins, "broken", "raise ImportError('missing dependency foo')\n")
    write_collector(plugins, "noreadme", RAISER, readme=None)
    (plugins / "not_a_collector").mkdir()
    config = {
        "writer": {"enabled": True},
        "old": {"enabled": True, "greeting": "moin"},
        "consts": {"enabled": True, "word": "hello"},
    }
    manager = manager_for(plugins, ws, config)
    assert sorted(manager.collectors) == ["consts", "old", "raiser", "writer"]
    errors = {e.name: e.error for e in manager.errors}
    assert "missing dependency foo" in errors["broken"]
    assert "README.md" in errors["noreadme"]
    assert [c.name for c in manager.enabled()] == ["consts", "old", "writer"]
    assert manager.collectors["old"].cron == "0 7 * * *"
    assert manager.collectors["old"].interval_seconds is None

    runner = CollectorRunner(manager, ws)
    assert runner.run_once("old").outcome == "ok"
    assert ws.read_text("collectors/old/x.md") == "moin"
    assert runner.run_once("consts").outcome == "ok"
    assert ws.read_text("collectors/consts/out.txt") == "hello"


def test_collector_schema_errors_name_the_config_path(ws, plugins):
    manager = manager_for(plugins, ws, {"consts": {"enabled": True, "word": 5}})
    errors = {e.name: e.error for e in manager.errors}
    assert "collectors.consts.word" in errors["consts"]
    assert "consts" not in manager.collectors
    # A misspelt notify rule is caught by the framework part of the schema.
    manager = manager_for(plugins, ws, {"writer": {"enabled": True, "notify": [{"match": "subject", "value": "x"}]}})
    assert "collectors.writer.notify[0].match" in {e.name: e.error for e in manager.errors}["writer"]


def test_prompt_section_lists_exactly_enabled_loaded_collectors(ws, plugins):
    write_collector(plugins, "broken", "raise RuntimeError('boom')\n")
    config = {
        "writer": {"enabled": True},
        "consts": {"enabled": True, "word": "x"},
        "broken": {"enabled": True},
        "raiser": {"enabled": False},
    }
    manager = manager_for(plugins, ws, config)
    text = manager.prompt_section()
    assert text.startswith("[Collectors]\n")
    assert "- consts: Constants form taking config." in text
    assert "- writer: Writes a counter." in text
    assert "collectors/writer/latest.md, collectors/writer/items.jsonl" in text
    assert "latest.md holds the last run" in text
    assert "- raiser" not in text and "- broken" not in text and "- old" not in text
    assert [line.split(":")[0] for line in text.splitlines() if line.startswith("- ")] == ["- consts", "- writer"]
    assert text.index("- consts") < text.index("- writer")
    assert "targeted reads" in text and "not expanded" in text
    # Byte-stable across reloads and instances (cacheable system prompt).
    again = manager_for(plugins, ws, config)
    assert again.prompt_section() == text
    assert manager_for(plugins, ws, {}).prompt_section() == ""


def test_run_once_records_outputs_state_and_written_files(ws, plugins):
    clock = FakeClock(datetime(2025, 1, 6, 9, 0, tzinfo=UTC))
    manager = manager_for(plugins, ws, {"writer": {"enabled": True}})
    runner = CollectorRunner(manager, ws, clock=clock)
    first = runner.run_once("writer")
    assert first.outcome == "ok", first.error
    assert first.written == ["collectors/writer/items.jsonl", "collectors/writer/latest.md"]
    assert first.new_items == [{"title": "item 0", "from": "boss@example.org"}]
    assert ws.read_json("collectors/writer/new.json")["items"] == first.new_items
    clock.advance(minutes=1)
    second = runner.run_once("writer")
    assert second.new_items[0]["title"] == "item 1"
    runs = ws.read_jsonl("collectors/writer/runs.jsonl")
    assert [r["outcome"] for r in runs] == ["ok", "ok"]
    assert runs[1]["summary"] == "run 1"
    state = load_state(ws, "writer")
    assert state.outcome == "ok" and state.consecutive_failures == 0 and state.runs == 2
    assert from_iso(state.next_run) == clock.now + timedelta(seconds=60)


def test_failure_is_isolated_and_backs_off_exponentially(ws, plugins):
    clock = FakeClock(datetime(2025, 1, 6, 9, 0, tzinfo=UTC))
    manager = manager_for(plugins, ws, {"writer": {"enabled": True}, "raiser": {"enabled": True}})
    runner = CollectorRunner(manager, ws, clock=clock, retry_base_seconds=60, max_backoff_seconds=3600)
    started = runner.tick(wait=True)
    assert sorted(started) == ["raiser", "writer"]
    assert load_state(ws, "writer").outcome == "ok"
    delays = []
    for _ in range(8):
        state = load_state(ws, "raiser")
        assert state.outcome == "error"
        assert "feed server exploded" in state.error
        delays.append((from_iso(state.next_run) - clock.now).total_seconds())
        clock.set(from_iso(state.next_run))
        assert "raiser" in runner.due()
        runner.run_once("raiser")
    assert delays == [60, 120, 240, 480, 960, 1920, 3600, 3600]
    assert load_state(ws, "raiser").consecutive_failures == 9
    assert [backoff_seconds(n, 10, 100) for n in range(0, 6)] == [0, 10, 20, 40, 80, 100]


def test_hung_collector_times_out_and_is_not_restarted_while_alive(tmp_path, ws, plugins):
    HANG_RELEASE.clear()
    HANG_STARTED.clear()
    write_collector(plugins, "hanger", HANGER)
    manager = manager_for(
        plugins, ws, {"hanger": {"enabled": True, "timeout_seconds": 0.1}, "writer": {"enabled": True}}
    )
    clock = FakeClock(datetime(2025, 1, 6, 9, 0, tzinfo=UTC))
    runner = CollectorRunner(manager, ws, clock=clock)
    try:
        outcome = runner.run_once("hanger")
        assert outcome.outcome == "timeout"
        assert "0.1s" in outcome.error
        assert HANG_STARTED.wait(10)  # its thread began (under load perhaps after the 0.1 s timeout)
        assert load_state(ws, "hanger").consecutive_failures == 1
        # Other collectors keep running while the hung thread lives.
        assert runner.run_once("writer").outcome == "ok"
        clock.advance(hours=2)
        assert "hanger" not in runner.due()
        assert runner.run_once("hanger").outcome == "skipped"
    finally:
        HANG_RELEASE.set()
    for _ in range(200):
        if not runner.is_running("hanger"):
            break
        threading.Event().wait(0.02)
    assert not runner.is_running("hanger")
    assert "hanger" in runner.due()


def test_runs_never_overlap(tmp_path, ws):
    base = tmp_path / "plugins"
    write_collector(
        base,
        "slow",
        """
        import threading, time
        INTERVAL_SECONDS = 60
        DESCRIPTION = "slow"
        ACTIVE = []
        PEAK = [0]
        LOCK = threading.Lock()
        RELEASE = threading.Event()
        def run(workspace):
            with LOCK:
                ACTIVE.append(1)
                PEAK[0] = max(PEAK[0], len(ACTIVE))
            RELEASE.wait(10)  # the test lets it finish once the other four calls have returned
            with LOCK:
                ACTIVE.pop()
            workspace.append_jsonl("collectors/slow/runs-seen.jsonl", {"x": 1})
        """,
    )
    manager = manager_for(base, ws, {"slow": {"enabled": True}})
    runner = CollectorRunner(manager, ws)
    module = manager.collectors["slow"].module
    results = []
    threads = [threading.Thread(target=lambda: results.append(runner.run_once("slow"))) for _ in range(5)]
    for t in threads:
        t.start()
    # However slowly the threads start, the first run is still going while the others ask.
    deadline = time.monotonic() + 10
    while len(results) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    module.RELEASE.set()
    for t in threads:
        t.join(10)
    outcomes = sorted(r.outcome for r in results)
    assert outcomes.count("ok") == 1 and outcomes.count("skipped") == 4
    assert manager.collectors["slow"].module.PEAK[0] == 1
    assert len(ws.read_jsonl("collectors/slow/runs-seen.jsonl")) == 1


def test_state_survives_restart_and_missed_runs_coalesce(ws, plugins):
    clock = FakeClock(datetime(2025, 1, 6, 9, 0, tzinfo=UTC))
    config = {"writer": {"enabled": True}}
    runner = CollectorRunner(manager_for(plugins, ws, config), ws, clock=clock)
    assert runner.tick(wait=True) == ["writer"]
    assert runner.due() == []

    # Restart 30 s later: nothing is due, the stored schedule is honoured.
    clock.advance(seconds=30)
    restarted = CollectorRunner(manager_for(plugins, ws, config), ws, clock=clock)
    assert restarted.due() == []
    assert restarted.tick(wait=True) == []

    # Down for 10 hours (600 missed intervals): exactly one run at start.
    clock.advance(hours=10)
    restarted = CollectorRunner(manager_for(plugins, ws, config), ws, clock=clock)
    assert restarted.tick(wait=True) == ["writer"]
    assert restarted.tick(wait=True) == []
    assert len(ws.read_jsonl("collectors/writer/items.jsonl")) == 2
    assert from_iso(load_state(ws, "writer").next_run) == clock.now + timedelta(seconds=60)


@pytest.mark.parametrize(
    "start, expected_utc",
    [
        # Spring forward (Sunday 2025-03-30): 07:00 CET = 06:00Z, then 07:00 CEST = 05:00Z.
        (
            datetime(2025, 3, 28, 12, 0, tzinfo=UTC),
            ["2025-03-29T06:00:00+00:00", "2025-03-30T05:00:00+00:00", "2025-03-31T05:00:00+00:00"],
        ),
        # Fall back (Sunday 2025-10-26): 05:00Z, then 06:00Z.
        (
            datetime(2025, 10, 24, 12, 0, tzinfo=UTC),
            ["2025-10-25T05:00:00+00:00", "2025-10-26T06:00:00+00:00", "2025-10-27T06:00:00+00:00"],
        ),
    ],
)
def test_cron_0700_stays_local_across_dst_and_restarts(tmp_path, ws, plugins, start, expected_utc):
    config = {"old": {"enabled": True}}
    clock = FakeClock(start)
    fired = []
    for _ in expected_utc:
        # A fresh runner each day: the schedule must survive restarts too.
        runner = CollectorRunner(manager_for(plugins, ws, config), ws, timezone="Europe/Berlin", clock=clock)
        assert runner.due() == []
        planned = from_iso(load_state(ws, "old").next_run)
        clock.set(planned - timedelta(seconds=1))
        assert runner.due() == []
        clock.set(planned)
        assert runner.tick(wait=True) == ["old"]
        fired.append(planned.isoformat())
        assert planned.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Berlin")).hour == 7
    assert fired == expected_utc


def test_notify_rules_push_matching_new_items_only(ws, plugins):
    pushed = []
    config = {"writer": {"enabled": True, "notify": [{"match": "sender", "value": "BOSS@example.org"}]}}
    runner = CollectorRunner(
        manager_for(plugins, ws, config), ws, notify=lambda name, text: pushed.append((name, text))
    )
    runner.run_once("writer")
    assert pushed == [("writer", "writer: 1 new matching item\n- item 0 (boss@example.org)")]
    quiet = CollectorRunner(
        manager_for(plugins, ws, {"writer": {"enabled": True}}), ws, notify=lambda *a: pushed.append(a)
    )
    quiet.run_once("writer")
    assert len(pushed) == 1
    other = {"writer": {"enabled": True, "notify": [{"match": "keyword", "value": "no such words"}]}}
    CollectorRunner(manager_for(plugins, ws, other), ws, notify=lambda *a: pushed.append(a)).run_once("writer")
    assert len(pushed) == 1


def test_start_and_stop_run_in_background(ws, plugins):
    manager = manager_for(plugins, ws, {"writer": {"enabled": True}})
    runner = CollectorRunner(manager, ws)
    runner.start()
    try:
        for _ in range(250):
            if ws.exists("collectors/writer/new.json"):
                break
            threading.Event().wait(0.02)
    finally:
        runner.stop(timeout=5)
    assert ws.read_json("collectors/writer/new.json")["items"][0]["title"] == "item 0"
    assert load_state(ws, "writer").outcome == "ok"


def test_a_stop_while_the_runner_is_starting_waits_for_it_and_a_stopped_runner_stays_stopped(ws, plugins, monkeypatch):
    """A /reload right after the bot started stops the collector runner while its start is under way (two threads):
    the stop failed with "cannot join thread before it is started", so /reload answered nothing. The stop now
    waits for the start and ends the loop; a start after a stop does nothing (a replaced runner never runs)."""
    import assistant_framework.collectors.runner as runner_module

    entered, go = threading.Event(), threading.Event()
    real_thread = threading.Thread  # the test's own threads start at once

    class SlowStart(real_thread):
        def start(self) -> None:  # the moment between the thread made and the thread started
            entered.set()
            go.wait(10)
            super().start()

    monkeypatch.setattr(runner_module.threading, "Thread", SlowStart)
    runner = CollectorRunner(manager_for(plugins, ws, {"writer": {"enabled": False}}), ws)
    starting = real_thread(target=runner.start)
    starting.start()
    assert entered.wait(10)
    failed: list[BaseException] = []

    def stop() -> None:
        try:
            runner.stop(timeout=5)
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            failed.append(exc)

    stopping = real_thread(target=stop)
    stopping.start()
    stopping.join(0.5)  # the old stop failed at once here; the new one waits for the start
    go.set()
    starting.join(10)
    stopping.join(10)
    assert failed == [] and not stopping.is_alive()
    assert runner._loop_thread is not None and not runner._loop_thread.is_alive()
    runner.start()  # stopped for good
    assert not runner._loop_thread.is_alive()


def test_the_run_log_is_cut_to_its_newest_runs_past_its_size(ws, plugins):
    """A collector every 10 minutes wrote 11 MB of runs.jsonl a year, kept whole: past its size the log is cut to
    its newest runs (the new one last), so it stays bounded."""
    line = '{"started":"2025-01-01T00:00:00+00:00","outcome":"ok","new":0,"summary":"old run %06d","errors":[]}\n'
    count = RUNS_CAP.max_bytes // len(line % 0) + 10
    ws.write_text("collectors/writer/runs.jsonl", "".join(line % n for n in range(count)))
    runner = CollectorRunner(manager_for(plugins, ws, {"writer": {"enabled": True}}), ws)
    assert runner.run_once("writer").outcome == "ok"
    size = ws.path("collectors/writer/runs.jsonl").stat().st_size
    runs = ws.read_jsonl("collectors/writer/runs.jsonl")
    assert size <= RUNS_CAP.max_bytes // 2 and len(runs) <= RUNS_CAP.keep_lines
    assert runs[-1]["summary"] == "run 0"
    assert [r["summary"] for r in runs[:-1]] == [f"old run {n:06d}" for n in range(count - len(runs) + 1, count)]
