"""Smoke test of the benchmark scripts: each runs at its ``--quick`` size, exits 0 and prints its table.

Behaviour only, never timing: each check runs its script and looks at the table's header, its
rows and the facts a script reports besides figures (chat order kept, skills loaded, replies
answered).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import preload

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

from _common import LAUNCHER_ENV, percentile, table  # noqa: E402
from prefix_stability import common_prefix  # noqa: E402

# A script at its smallest size takes seconds idle; on a machine busy with other runs e2e took over 120 s.
pytestmark = pytest.mark.timeout(300)


def bench(name: str, *args: str) -> subprocess.CompletedProcess:
    """``bench/<name>.py --quick``, its smallest size, finished (each test runs its own script: a test
    stays within the per-test bound, and a failure names its script). The script is a process of its own,
    forked by the worker's zygote (``python -m bench.<name>``: tests/preload.py) without an interpreter's
    start and the project's imports, and so are the Python processes it starts through
    ``_common.module_command`` (e2e's bots, the MCP servers: ``LAUNCHER_ENV``); the start-up bench's bots,
    whose start it measures, are real starts."""
    launcher = preload.command_line([sys.executable, "-m", "module"])[:-1]
    return preload.run(
        [sys.executable, "-m", f"bench.{name}", "--quick", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), LAUNCHER_ENV: json.dumps(launcher)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard only
    )


def table_rows(stdout: str, first_header: str) -> tuple[list[str], list[list[str]]]:
    """Header cells and body rows of the Markdown table whose first header cell is ``first_header``."""
    lines = [line for line in stdout.splitlines() if line.startswith("|")]
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == first_header:
            body = [[c.strip() for c in row.strip("|").split("|")] for row in lines[i + 2 :]]
            return cells, body
    raise AssertionError(f"no table starting with {first_header!r} in:\n{stdout}")


def check_ok(run: subprocess.CompletedProcess) -> str:
    assert run.returncode == 0, (
        f"{run.args} exited {run.returncode}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr[-3000:]}"
    )
    assert run.stdout.startswith("machine: "), run.stdout
    assert re.search(r"machine: \d+ CPU \(.+\), [\d.]+ GB RAM, Python 3\.\d+", run.stdout)
    return run.stdout


def test_turn_overhead():
    out = check_ok(bench("turn_overhead"))
    header, rows = table_rows(out, "files")
    assert "overhead p50 ms" in header and "recall p50 ms" in header
    assert [r[:2] for r in rows] == [["30", "100"], ["100", "500"]]
    # The index holds the logged turns plus the synthetic files.
    assert [int(r[2]) for r in rows] == [130, 600]
    assert all(float(r[4]) > 0 for r in rows)
    assert "largest/smallest p50 overhead" in out


def test_concurrency_keeps_chat_order():
    out = check_ok(bench("concurrency"))
    header, rows = table_rows(out, "scenario")
    assert header[-1] == "order kept (chats)"
    names = [r[0] for r in rows]
    assert names == [
        "per-chat locks c=1",
        "per-chat locks c=4",
        "per-chat locks, 2 msgs/chat c=4",
        "global lock (baseline) c=4",
    ]
    order = dict((r[0], r[-1]) for r in rows)
    assert order["per-chat locks, 2 msgs/chat c=4"] == "6/6"
    assert all(float(r[3]) > 0 for r in rows)


def test_prefix_stability():
    out = check_ok(bench("prefix_stability"))
    header, rows = table_rows(out, "scenario")
    assert "reused bytes (weighted)" in header and "messages reused (weighted)" in header
    assert len(rows) == 3 and "two_step" in rows[2][0]
    # 6 scripted turns, 5 of them with one skill call: 6 final answers + 5 call rounds;
    # with skill_choice two_step each call round is two requests (the name, then the arguments).
    assert [int(r[1]) for r in rows] == [11, 11, 16], rows
    assert all(0 < float(r[3].rstrip("%")) <= 100 and 0 < float(r[4].rstrip("%")) <= 100 for r in rows)
    assert "warning" not in out, out


def test_stream_cpu():
    out = check_ok(bench("stream_cpu"))
    header, rows = table_rows(out, "answer")
    assert header[4:6] == ["turn CPU ms", "guard ms"]
    assert [(r[0], r[1], r[2], r[-1]) for r in rows] == [
        ("prose", "3,000", "600", "2,999"),
        ("reply object", "2,999", "599", "2,928"),
    ]


def test_memory_search():
    out = check_ok(bench("memory_search"))
    header, rows = table_rows(out, "turns")
    assert "search p50 ms" in header
    assert [(r[0], r[1]) for r in rows] == [("500", "500"), ("2k", "2000")]


def test_day_index():
    out = check_ok(bench("day_index"))
    header, rows = table_rows(out, "day")
    assert header[2] == "one turn indexed, CPU ms p50" and [r[0] for r in rows][:2] == ["5 kB", "20 kB"]
    header, rows = table_rows(out, "turns")
    assert "whole-day BM25 ms, recall p50 / p95" in header and [r[0] for r in rows] == ["500"]


def test_serve_mcp_memory_search():
    out = check_ok(bench("serve_mcp"))
    header, rows = table_rows(out, "files")
    assert "p50 ms" in header
    assert [(r[0], r[1]) for r in rows] == [("500", "20")]
    assert float(rows[0][2]) > 0


def test_startup_answers_every_message():
    out = check_ok(bench("startup"))
    _, rows = table_rows(out, "figure")
    figures = dict((r[0], r[1]) for r in rows)
    assert figures["process start to first getUpdates, bot (median of 1)"].endswith(" s")
    assert figures["the same, minimal python-telegram-bot bot (median of 1)"].endswith(" s")
    assert float(figures["ratio bot / minimal bot (target: at most 1.5)"]) > 0
    assert "time to answer 10 messages pushed at once" in figures
    assert float(figures["resident memory after 10 messages answered (VmRSS)"].split()[0]) > 10


@pytest.mark.slow(
    reason="writes a week of use and starts the bot, `assistant web` and three CLI commands on it and on an empty "
    "workspace, as the bench does (15-40 s as the machine's load goes)"
)
def test_year_times_every_path_on_both_workspaces():
    out = check_ok(bench("year"))
    header, rows = table_rows(out, "path")
    assert header == ["path", "empty workspace", "7 days of use"]
    figures = {r[0]: r[1:] for r in rows}
    for path in ("bot: process start to the first answer", "assistant jobs list --json", "web: GET /api/collectors"):
        assert all(cell.endswith(("ms", " s")) for cell in figures[path]), (path, figures[path])
    assert figures["its once-map (entries)"][0] == "0"
    assert "histories held in memory after: " in out


@pytest.mark.slow(
    reason="starts the bare PTB bot and four of ours against the fakes and times eight rows, as the bench does "
    "(25-55 s as the machine's load goes)"
)
def test_e2e_prints_every_row_with_ideal_and_ratio():
    out = check_ok(bench("e2e", "--notes", "3"))
    assert "memory recall on, 3 notes in its workspace)" in out
    header, rows = table_rows(out, "figure")
    assert header == ["figure", "value", "ideal", "ratio", "target"]
    names = [r[0] for r in rows]
    assert names[0].startswith("bare PTB bot (floor)")
    assert any(n.startswith("turn, instant model, streaming on") for n in names)
    assert sum(1 for n in names if " chats x " in n) == 4
    assert all(float(r[3]) > 0 for r in rows if " chats x " in r[0])
    assert "Bot API calls per reply" in out
    # The floor's turns alternate with each mode's, on fakes of its own: its row and its CPU are given per mode.
    assert "alternating with the floor on fakes of its own" in out
    assert sum(1 for n in names if n.startswith("bare PTB bot (floor), beside streaming")) == 2
    cpu = re.search(
        r"bot CPU per sequential turn \(user \+ system\): floor beside off ([\d.]+) ms, streaming off ([\d.]+) ms",
        out,
    )
    # The line is there; its figures are the started process's (here the tests' launcher, not the bot).
    assert cpu and float(cpu.group(2)) >= 0


def test_e2e_notes_are_the_owners_notes_that_recalls_refresh_walks(tmp_path):
    """``bench/e2e.py --notes N``: N notes the memory index takes as the owner's (``notes``), which recall's
    refresh before every turn stats, in a workspace the bot then opens."""
    from e2e import write_notes

    from assistant_framework.memory import MemoryService
    from assistant_framework.workspace import Workspace

    write_notes(tmp_path / "ws", 25)
    svc = MemoryService(Workspace(tmp_path / "ws"), {}, start_worker=False)
    try:
        svc.refresh()
        rows = svc.index.query("SELECT source, count(*) FROM files GROUP BY source")
        assert rows == [("notes", 25)]
        assert [h.path for h in svc.search("item 7", limit=1)] == ["notes/topic7/note7.md"]
    finally:
        svc.close()


def test_prompt_size_lists_sections_and_skills():
    out = check_ok(bench("prompt_size"))
    _, rows = table_rows(out, "section")
    names = [r[0] for r in rows]
    for section in ("[base]", "[protocol]", "[tools]", "[collectors]", "system prompt total"):
        assert section in names
    assert "  tools: notes".strip() in [n.strip() for n in names]
    total = next(int(r[1]) for r in rows if r[0] == "system prompt total")
    assert total == sum(int(r[1]) for r in rows if r[0].startswith("[")) + 2 * (
        sum(1 for n in names if n.startswith("[")) - 1
    )


def test_percentile_and_table_helpers():
    assert percentile([], 50) == 0.0
    assert percentile([5.0], 99) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile(list(range(101)), 99) == 99
    rendered = table(["a", "bb"], [[1, "x"]]).splitlines()
    assert rendered == ["| a | bb |", "|---|----|", "| 1 | x  |"]


@pytest.mark.parametrize(
    "a, b, expected",
    [(b"", b"", 0), (b"abc", b"abd", 2), (b"abc", b"abc", 3), (b"abc", b"abcdef", 3), (b"x", b"y", 0)],
)
def test_common_prefix(a, b, expected):
    assert common_prefix(a, b) == expected


def test_mcp_prompt_measures_10_and_50_tools():
    """bench/mcp_prompt.py starts the real mcp-server-git and mcp-server-time and prints its rows."""
    out = check_ok(bench("mcp_prompt"))
    assert "tools listed by the real servers: 14" in out
    _, rows = table_rows(out, "skills offered")
    by_label = {row[0]: row for row in rows}
    assert int(by_label["+ 10 MCP tools"][1]) == int(by_label["built-in skills only"][1]) + 10
    assert int(by_label["+ 50 MCP tools"][3]) > 0  # past the cap some are named only
    capped = int(by_label["+ 50 MCP tools"][2].split(" / ")[0])
    assert capped <= 8000  # the cap holds, the names-only line too


def _children(pid: int) -> set[int]:
    """The processes ``pid`` started that still run (Linux: /proc/<pid>/task/<tid>/children)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads child processes from /proc (Linux)")
def test_a_killed_startup_bench_stops_the_bot_it_started() -> None:
    """SIGTERM to bench/startup.py while its bot runs: the bench ends, and so does its bot (it was left
    running before)."""
    from tests.waiting import wait_until

    proc = preload.popen(
        [sys.executable, "-m", "bench.startup", "--quick"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _children(proc.pid), timeout=120, what="the bench's first bot")
        bots = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        # The bench stops (and reaps) its bot before it exits: none may still run now. (Left behind, a bot
        # gives up on its own later, when the bench's fake Bot API is gone: that is not waited for.)
        assert [pid for pid in bots if _running(pid)] == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
