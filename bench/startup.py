"""Start-up and footprint: the real bot process against the fake Telegram Bot API and fake model.

``python -m messaging_llm_bot`` runs as a subprocess with a config pointing
``telegram.base_url`` at ``FakeBotAPI`` and the model at ``FakeChatServer`` (answering at
once). Measured: the time from ``Popen`` to the first ``getUpdates`` call the fake sees,
beside the same time for a minimal python-telegram-bot bot (``bench/minimal_ptb_bot.py``)
in the same run (median of ``--runs`` starts each, alternating), and their ratio; resident
memory (VmRSS from /proc/<pid>/status) when idle and after N messages pushed through the
fake Bot API (spread over several allowed users) have all been answered, of the bot's last timed
start (left running: the messages need no start of their own). Each chat may hold
all of its messages (``runtime.max_pending_per_chat`` is set to the messages per user): the
bound on a chat's queue is not what this measures, and at its default (20) the bot leaves the
rest of a chat's burst unanswered by design. Killed (SIGTERM, SIGHUP, Ctrl-C), the bench stops
the bots it started.

    python bench/startup.py                # N = 1000 messages, 5 starts each
    python bench/startup.py --quick        # N = 10, 1 start each, no untimed start first, 0.1 s idle (smoke test)
    python bench/startup.py --messages 300 --runs 9
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    FAKE_SERVER_NOTE,
    ROOT,
    bench_config,
    end_children_when_killed,
    fake_server,
    machine_line,
    start_process,
    stop_process,
    table,
    write_config_dir,
)

from tests.fakes.bot_api import FakeBotAPI  # noqa: E402

USERS = 10


def rss_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process in kB, from /proc/<pid>/status."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def replies(fake: FakeBotAPI) -> int:
    """Messages the bot sent successfully (its answers)."""
    return sum(1 for call in fake.calls("sendMessage") if call.get("status") == 200)


def wait(predicate, timeout: float, what: str, proc: subprocess.Popen, step: float = 0.002):
    """Poll ``predicate`` until truthy; fail naming ``what`` on timeout or if the bot exited."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            raise RuntimeError(f"the bot process exited with status {proc.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {timeout:.0f} s")
        time.sleep(step)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process used so far (from /proc/<pid>/stat): steady on a busy machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_to_first_poll(
    command: list[str],
    env: dict,
    log_path: Path,
    config: dict | None = None,
    config_dir: Path | None = None,
    *,
    kept: tuple[FakeBotAPI, list[subprocess.Popen]] | None = None,
) -> tuple[float, float]:
    """(wall seconds, CPU seconds) from ``Popen(command)`` to the first ``getUpdates`` reaching a new fake.

    ``{token}``, ``{base_url}`` and ``{base_file_url}`` in ``command`` become the fake's; with
    ``config`` the bot's config is written to ``config_dir`` pointing at it. The process is stopped after,
    unless ``kept`` gives the fake (the caller's, not called yet) and the caller's list of started processes:
    the process then goes on running on that fake, in that list, and the caller stops it.
    """
    fake = kept[0] if kept else FakeBotAPI().start()
    children: list[subprocess.Popen] = kept[1] if kept else []
    address = {"token": fake.token, "base_url": fake.base_url, "base_file_url": fake.base_file_url}
    try:
        if config is not None and config_dir is not None:
            config = json.loads(json.dumps(config))
            config["telegram"].update(address)
            write_config_dir(config, config_dir)
        with open(log_path, "ab") as log:
            started = time.perf_counter()
            proc = start_process(
                children,
                [arg.format(**address) for arg in command],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            wait(fake.polls_started, 60, "getUpdates call", proc)  # when it arrives, not when it returns
            return time.perf_counter() - started, cpu_seconds(proc.pid)
    finally:
        if not kept:
            for proc in children:
                stop_process(proc)
            fake.stop()


def compare_startup(
    config: dict,
    base: Path,
    runs: int,
    env: dict,
    log_path: Path,
    kept: tuple[FakeBotAPI, list[subprocess.Popen]],
    warm: bool = True,
) -> tuple[tuple, tuple]:
    """Median (wall, CPU) start-up to the first poll of the bot and of the minimal PTB bot, started alternately
    (``warm``: after one untimed start of each). The bot's last timed start is left running on ``kept``'s fake,
    in its list (``time_to_first_poll``): it answers the messages next, without a start of its own."""
    floor_cmd = [sys.executable, str(ROOT / "bench" / "minimal_ptb_bot.py"), "{token}", "{base_url}", "{base_file_url}"]

    def bot(name: str, keep: bool = False) -> tuple[float, float]:
        command = [
            sys.executable,
            "-m",
            "messaging_llm_bot",
            "--config",
            str(base / f"cfg-{name}"),
            "--workspace",
            str(base / f"ws-{name}"),
        ]
        return time_to_first_poll(command, env, log_path, config, base / f"cfg-{name}", kept=kept if keep else None)

    # As a user runs it: Python caches compiled modules after the first start, so one start of each
    # is not timed (and PYTHONDONTWRITEBYTECODE, set on some machines, would make every start
    # compile this project's modules again while the installed libraries have theirs).
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if warm:
        time_to_first_poll(floor_cmd, env, log_path)
        bot("warm")
    floor_times, bot_times = [], []
    for run in range(runs):
        floor_times.append(time_to_first_poll(floor_cmd, env, log_path))
        bot_times.append(bot(str(run), keep=run == runs - 1))

    def medians(times: list[tuple[float, float]]) -> tuple[float, float]:
        return statistics.median(w for w, _ in times), statistics.median(c for _, c in times)

    return medians(bot_times), medians(floor_times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 messages, 1 start each (smoke test)")
    parser.add_argument("--messages", type=int, default=None, help="messages pushed after start-up (default 1000)")
    parser.add_argument(
        "--runs", type=int, default=None, help="starts of each bot for the start-up medians (default 5)"
    )
    args = parser.parse_args(argv)
    end_children_when_killed()
    count = args.messages or (10 if args.quick else 1000)
    runs = args.runs or (1 if args.quick else 5)
    # Seconds from the first getUpdates to the idle memory figure (a smoke test does not read the figure).
    settle = 0.1 if args.quick else 2.0
    per_chat = -(-count // USERS)  # every message of a chat's burst may wait: the queue's bound is not measured
    base = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    model = fake_server(latency=0.0)
    fake = FakeBotAPI().start()
    children: list[subprocess.Popen] = []
    log_path = base / "bot.log"
    try:
        config = bench_config(
            model.base_url, max_concurrency=4, extra_runtime={"max_pending_per_chat": per_chat, "busy_mode": "queue"}
        )
        config["telegram"] = {
            "token": fake.token,
            "base_url": fake.base_url,
            "base_file_url": fake.base_file_url,
            "allowed_user_ids": list(range(1, USERS + 1)),
        }
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        # The last timed start of the bot goes on running on ``fake`` (which it has polled) and answers the messages.
        (startup_s, startup_cpu), (floor_s, floor_cpu) = compare_startup(
            config, base, runs, env, log_path, (fake, children), warm=not args.quick
        )
        proc = children[-1]
        time.sleep(settle)  # post-init calls, first long poll
        idle = rss_kb(proc.pid)
        pushed = time.perf_counter()
        for i in range(count):
            fake.send_message(f"message {i}: what is on my list today?", user_id=1 + i % USERS)
        wait(lambda: replies(fake) >= count, 600, f"{count} replies", proc, step=0.05)
        turns_s = time.perf_counter() - pushed
        after = rss_kb(proc.pid)
        methods: dict[str, int] = {}
        for call in fake.calls():
            if call["method"] != "getUpdates":
                methods[call["method"]] = methods.get(call["method"], 0) + 1
    except (RuntimeError, TimeoutError) as exc:
        tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
        print(f"startup benchmark failed: {exc}\n--- bot log tail ---\n{tail}", file=sys.stderr)
        return 1
    finally:
        for proc in children:
            stop_process(proc)
        fake.stop()
        model.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(machine_line())
    print(FAKE_SERVER_NOTE)
    print(
        "bot: python -m messaging_llm_bot (Telegram frontend, long polling) against FakeBotAPI and FakeChatServer "
        f"(no latency); {USERS} users, runtime.max_pending_per_chat {per_chat} (a chat's whole burst)"
    )
    print(
        table(
            ["figure", "value"],
            [
                [f"process start to first getUpdates, bot (median of {runs})", f"{startup_s:.2f} s"],
                [f"the same, minimal python-telegram-bot bot (median of {runs})", f"{floor_s:.2f} s"],
                ["ratio bot / minimal bot (target: at most 1.5)", f"{startup_s / floor_s:.2f}"],
                [
                    "CPU time to first getUpdates, bot / minimal bot (steady on a busy machine)",
                    f"{startup_cpu:.2f} s / {floor_cpu:.2f} s = {startup_cpu / floor_cpu:.2f}",
                ],
                [
                    f"resident memory idle (VmRSS, {settle:g} s after first getUpdates)",
                    f"{idle['VmRSS'] / 1024:.1f} MB",
                ],
                [f"resident memory after {count} messages answered (VmRSS)", f"{after['VmRSS'] / 1024:.1f} MB"],
                ["peak resident memory (VmHWM)", f"{after['VmHWM'] / 1024:.1f} MB"],
                [
                    f"time to answer {count} messages pushed at once",
                    f"{turns_s:.1f} s ({count / turns_s:.1f} messages/s)",
                ],
                ["Bot API calls besides getUpdates", ", ".join(f"{m} {n}" for m, n in sorted(methods.items()))],
            ],
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
