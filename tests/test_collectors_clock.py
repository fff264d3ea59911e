"""Collectors on schedule when the clock or the machine misbehaves: another process running the same
collector, the wall clock set back, a run that hangs. Real plugin folders, files, and the real CLI process."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.collectors import runner as runner_module
from assistant_framework.collectors.manager import BUILTIN_DIR
from assistant_framework.collectors.state import load_state, update_state
from assistant_framework.schedules import from_iso, to_iso
from assistant_framework.workspace import Workspace
from tests.fixtures.collectors.helpers import FakeClock, write_collector
from tests.telegram_harness import RunningBot, make_runtime, telegram_config
from tests.test_jobs_bot import Clock
from tests.waiting import wait_until

UTC = timezone.utc

# Each run notes its start and end (with its process id) and waits, up to 30 s, for the test's go-ahead file.
SLOW = """
import os, time
DESCRIPTION = "Waits for the test."
INTERVAL_SECONDS = 600
def run(workspace, config):
    workspace.append_jsonl("collectors/slow/log.jsonl", {"pid": os.getpid(), "event": "start"})
    deadline = time.monotonic() + 30
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


def test_the_bot_waits_for_a_run_another_process_makes_instead_of_trying_it_five_times_a_second(tmp_path):
    config_dir, ws, manager = setup(tmp_path)
    past = datetime.now(UTC) - timedelta(minutes=1)
    update_state(
        ws, "slow", last_start=to_iso(past - timedelta(minutes=10)), last_end=to_iso(past), next_run=to_iso(past)
    )
    runner = CollectorRunner(manager, ws)  # the bot's runner: the collector is due
    assert runner.due() == ["slow"]
    cli = subprocess.Popen(
        [sys.executable, "-m", "messaging_llm_bot.cli", "collectors", "run", "slow"]
        + ["--config", str(config_dir), "--workspace", str(ws.root)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: ws.read_jsonl("collectors/slow/log.jsonl"), what="the command's run began", timeout=30)
        assert runner.is_running("slow")
        assert runner.due() == []  # not started to be skipped, again and again
        assert runner.seconds_until_next() == runner_module.MAX_LOOP_SLEEP
    finally:
        ws.write_text("collectors/slow/go", "")
        out, _ = cli.communicate(timeout=60)
    assert cli.returncode == 0, out
    assert not runner.is_running("slow") and runner.due() == []  # its next run is ten minutes after the command's


def test_a_run_abandoned_at_its_timeout_keeps_another_process_out_until_its_thread_ends(tmp_path):
    # A server that never answers: the bot abandons the run at its timeout, but its thread still talks to it.
    config_dir, ws, manager = setup(tmp_path, timeout_seconds=0.3)
    runner = CollectorRunner(manager, ws)
    assert runner.run_once("slow").outcome == "timeout"
    cli = cli_run(config_dir, ws)
    assert cli.returncode == 1 and "running in another process" in cli.stdout, cli
    ws.write_text("collectors/slow/go", "")  # the server answers at last
    wait_until(lambda: not runner.is_running("slow"), what="the abandoned run's thread ended")
    again = cli_run(config_dir, ws)
    assert again.returncode == 0, again
    assert [row["event"] for row in ws.read_jsonl("collectors/slow/log.jsonl")] == ["start", "end"] * 2


# Counts its runs; each waits a moment so that an overlap would show.
COUNTER = """
import time
DESCRIPTION = "Counts its runs."
INTERVAL_SECONDS = 600
def run(workspace, config):
    workspace.append_jsonl("collectors/counter/log.jsonl", {"event": "start"})
    time.sleep(0.05)
    workspace.append_jsonl("collectors/counter/log.jsonl", {"event": "end"})
    return {"new_items": []}
"""


@pytest.fixture
def collector_bot(fake, bot_config, workspace, tmp_path, monkeypatch):
    """Factory: the Telegram bot with an interval collector (every 10 minutes) on the test's clock; its scheduler
    reads the clock every 0.1 s (30 s in the bot) so that a jump shows at once."""
    monkeypatch.setattr(runner_module, "MAX_LOOP_SLEEP", 0.1)
    plugins = tmp_path / "plugins"
    write_collector(plugins, "counter", COUNTER)
    running: list[RunningBot] = []

    def start(clock: Clock) -> RunningBot:
        config = telegram_config(bot_config, fake)
        config["runtime"] = {**config.get("runtime", {}), "collectors_dirs": [str(plugins)]}
        config["collectors"] = {"counter": {"enabled": True}}
        bot = RunningBot(make_runtime(config, workspace, tmp_path))
        bot.runtime.collector_clock = clock
        running.append(bot)
        return bot.start()

    yield start
    for bot in running:
        bot.stop()


def counted(workspace) -> list[str]:
    return [row["event"] for row in workspace.read_jsonl("collectors/counter/log.jsonl")]


def runs_settle(workspace, n: int) -> None:
    """``n`` runs ended, and no other began in the next half second."""
    wait_until(lambda: counted(workspace).count("end") >= n, what=f"{n} runs", timeout=20)
    time.sleep(0.5)
    assert counted(workspace) == ["start", "end"] * n


def test_the_bot_down_for_a_day_runs_an_interval_collector_once_at_start(collector_bot, workspace):
    clock = Clock()
    bot = collector_bot(clock)
    runs_settle(workspace, 1)  # first sight: at once
    bot.stop()
    clock.advance(days=1)  # 144 runs missed
    collector_bot(clock)
    runs_settle(workspace, 2)
    state = load_state(workspace, "counter")
    assert timedelta(minutes=9) < from_iso(state.next_run) - clock() <= timedelta(minutes=10)


def test_the_wall_clock_jumping_forward_then_back_neither_bursts_nor_skips_an_hour(collector_bot, workspace):
    clock = Clock()
    collector_bot(clock)
    runs_settle(workspace, 1)
    clock.advance(hours=3)  # the laptop slept: 18 runs missed, one is made
    runs_settle(workspace, 2)
    clock.advance(minutes=5)
    runs_settle(workspace, 2)
    clock.advance(hours=-1)  # NTP sets the clock back: the next run is still at most ten minutes away
    runs_settle(workspace, 2)
    clock.advance(minutes=9)
    runs_settle(workspace, 2)
    clock.advance(minutes=2)
    runs_settle(workspace, 3)
    clock.advance(minutes=9)
    runs_settle(workspace, 3)  # and from then on every ten minutes
    clock.advance(minutes=2)
    runs_settle(workspace, 4)


@pytest.fixture
def dripping_server():
    """A server that takes each connection and sends it a byte every 0.1 s, never a whole line: no read waits out
    a socket timeout, so only a deadline for the whole session ends it."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    stop = threading.Event()

    def drip(conn: socket.socket) -> None:
        with conn:
            while not stop.wait(0.1):
                try:
                    conn.sendall(b"*")
                except OSError:
                    return

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=drip, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    stop.set()
    server.close()


def test_a_mail_server_answering_a_byte_at_a_time_holds_the_mail_collector_only_until_its_timeout(
    tmp_path, dripping_server, monkeypatch
):
    monkeypatch.setenv("TEST_MAIL_PASSWORD", "secret")
    plugins = tmp_path / "plugins"
    write_collector(plugins, "counter", COUNTER)
    ws = Workspace(tmp_path / "ws")
    mail = {"host": "127.0.0.1", "port": dripping_server, "security": "plain", "username": "alice"}
    mail |= {"password_env": "TEST_MAIL_PASSWORD", "connect_timeout_seconds": 0.5, "timeout_seconds": 1}
    manager = CollectorManager(
        [BUILTIN_DIR, plugins], {"mail": {"enabled": True, **mail}, "counter": {"enabled": True}}, ws
    )
    manager.load()
    clock = FakeClock(datetime(2026, 12, 4, 9, 0, tzinfo=UTC))
    runner = CollectorRunner(manager, ws, clock=clock)
    assert sorted(runner.tick()) == ["counter", "mail"]
    # The other collector is not held: its run ends while the mail server is still dripping.
    wait_until(lambda: load_state(ws, "counter").runs == 1, what="the counter's run")
    runner.join(10)
    assert load_state(ws, "mail").outcome in ("timeout", "error")
    # The mail session is cut at the run's timeout, so its thread ends too (it talked on for as long as the
    # server dripped, and the mail collector was never started again).
    wait_until(lambda: not runner.is_running("mail"), what="the mail run's thread ended", timeout=5)
    clock.advance(minutes=2)  # past its first backoff (60 s)
    assert "mail" in runner.due()
