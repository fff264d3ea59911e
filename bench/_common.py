"""Shared helpers of the benchmark scripts: machine facts, percentiles, tables, synthetic
workspaces, and a bot assembled against the loopback fake model server.

Benchmarks print figures; they assert nothing about time. Every script imports this module
after putting the repository root on ``sys.path`` (``bench/`` is not a package).
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import platform
import random
import signal
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from assistant_framework.memory.log import safe_conversation_id  # noqa: E402
from assistant_framework.workspace import Workspace  # noqa: E402

TOPIC_WORDS = (
    "milk bread garden dentist invoice train berlin paris meeting project deadline budget "
    "birthday coffee running yoga piano guitar doctor insurance taxes holiday flight hotel "
    "weather recipe pasta salad bike repair car garage rent landlord school teacher homework "
    "concert ticket museum book novel movie series podcast laptop phone charger backup server "
    "python report slides review release salary bank loan mortgage plant tomato basil"
).split()
_SYLLABLES = ("ka", "lo", "mi", "ran", "te", "vo", "su", "del", "pa", "ri", "no", "gu", "shi", "bel", "tor", "ze")


def _vocabulary(size: int = 20_000) -> list[str]:
    """Topic words first (the most frequent), then made-up words: a Zipf-ranked vocabulary."""
    rng = random.Random(0)
    words = list(TOPIC_WORDS)
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


@functools.cache
def _zipf() -> tuple[list[str], list[float], list[float]]:
    """Synthetic text follows Zipf's law (exponent 1.07) over a 20k-word vocabulary, like prose: a uniform
    pick from a few dozen words would make every query match most of the log. Made on first use, not at
    import (the test suite imports this module for ``table`` and ``percentile`` in every worker).
    Returns the words, their cumulative weights, and those of the words after the 20 most frequent."""
    words = _vocabulary()
    cum = list(itertools.accumulate(1.0 / (rank + 1) ** 1.07 for rank in range(len(words))))
    return words, cum, [w - cum[19] for w in cum[20:]]


EPOCH = datetime(2024, 1, 1, 8, 0, tzinfo=timezone.utc)


# -- machine and statistics -----------------------------------------------------------


def machine_info() -> dict:
    """nproc, CPU model, RAM and Python version of this machine (for docs/benchmarks.md)."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": ram_gb,
        "python": platform.python_version(),
    }


def machine_line() -> str:
    """One line describing the machine, printed above every table."""
    m = machine_info()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"machine: {m['nproc']} CPU ({m['cpu']}), {m['ram_gb']} GB RAM, Python {m['python']}; load average now {load}"
    )


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (pasted as is into docs/benchmarks.md)."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + " |"

    out = [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def count_label(n: int) -> str:
    """10000 -> '10k', 1000000 -> '1M'."""
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


# -- synthetic workspace content -------------------------------------------------------


def sentence(rng: random.Random, words: int = 12) -> str:
    """Made-up prose: ``words`` words drawn by Zipf frequency."""
    vocabulary, cum, _ = _zipf()
    return " ".join(rng.choices(vocabulary, cum_weights=cum, k=words))


def query_words(rng: random.Random, k: int = 2) -> list[str]:
    """Content words for a query, drawn like the text but skipping the 20 most frequent."""
    vocabulary, _, query_cum = _zipf()
    return rng.choices(vocabulary[20:], cum_weights=query_cum, k=k)


def write_files(root: Path, count: int, seed: int = 1) -> None:
    """``count`` note and collector files written directly in their documented formats.

    Two thirds are notes (``notes/<slug>.md``, ``# Title`` first), one third collector
    digests (``collectors/rss/<YYYY-MM-DD>-<n>.md``), spread over subfolders so no folder
    grows past a few thousand entries.
    """
    rng = random.Random(seed)
    notes = count * 2 // 3
    for i in range(count):
        if i < notes:
            folder = root / "notes" / f"n{i // 2000:03d}"
            name = f"note-{i:06d}.md"
            text = f"# Note {i} {rng.choice(TOPIC_WORDS)}\n\n{sentence(rng, 30)}\n"
        else:
            j = i - notes
            day = (EPOCH + timedelta(days=j // 20)).date().isoformat()
            folder = root / "collectors" / "rss" / f"d{j // 2000:03d}"
            name = f"{day}-{j % 20:02d}.md"
            text = f"# News {day}\n\n- {sentence(rng, 14)}\n- {sentence(rng, 14)}\n"
        if i % 2000 == 0 or not folder.exists():
            folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def write_turns(root: Path, turns: int, conversations: int = 20, per_day: int = 50, seed: int = 2) -> list[str]:
    """``turns`` L0 log lines in ``conversations/<id>/<YYYY-MM-DD>.jsonl`` (the TurnLog format).

    Turns alternate user/assistant, ``per_day`` per conversation and day, spread evenly over
    ``conversations`` conversations. Returns the conversation ids used.
    """
    rng = random.Random(seed)
    ids = [f"chat-{c:03d}" for c in range(conversations)]
    per_conv = turns // conversations
    for c, conv in enumerate(ids):
        safe = safe_conversation_id(conv)
        folder = root / "conversations" / safe
        folder.mkdir(parents=True, exist_ok=True)
        count = per_conv + (1 if c < turns % conversations else 0)
        written = 0
        day_index = 0
        while written < count:
            day = EPOCH + timedelta(days=day_index)
            n_today = min(per_day, count - written)
            lines = []
            for n in range(1, n_today + 1):
                moment = day + timedelta(minutes=n)
                lines.append(
                    json.dumps(
                        {
                            "time": moment.isoformat(timespec="seconds"),
                            "conversation": conv,
                            "role": "user" if n % 2 else "assistant",
                            "text": sentence(rng, 14),
                            "message_id": None,
                            "turn_id": f"{safe}:{day.date().isoformat()}:{n}",
                        },
                        separators=(",", ":"),
                    )
                )
            (folder / f"{day.date().isoformat()}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
            written += n_today
            day_index += 1
    return ids


# -- the bot under test -----------------------------------------------------------------


def bench_config(
    base_url: str,
    *,
    max_concurrency: int = 4,
    memory: bool = True,
    extract_facts: bool = False,
    extra_runtime: dict | None = None,
) -> dict:
    """A config dict pointing at the fake model server; memory recall on, background model calls off."""
    return {
        "llm": {
            "runners": [{"name": "fake", "base_url": base_url, "model": "fake-model", "timeout_seconds": 30}],
            "max_skill_rounds": 5,
            "max_concurrency": max_concurrency,
            "retries_per_runner": 0,
            "stream": False,
        },
        "runtime": {"timezone": "UTC", "trace_keep": 200, **(extra_runtime or {})},
        "memory": {
            "enabled": memory,
            "recall": {"enabled": memory, "limit": 5, "budget_chars": 1500},
            # No background refresh during a measurement: the index is built before it.
            "refresh_seconds": 3600,
            # Fact extraction is a second model call per turn in the background; off unless asked.
            "extract_facts": extract_facts,
        },
        "telegram": {"token": ""},
    }


@dataclass
class Bot:
    """The parts a benchmark drives, from ``build_runtime`` as ``python -m messaging_llm_bot`` builds them."""

    agent: Any
    memory: Any
    workspace: Workspace
    runtime: Any

    def close(self) -> None:
        """Stop background work and close clients (the runtime owns the memory service)."""
        self.runtime.shutdown(timeout=5)


#: While a bench starts a process, a SIGTERM or SIGHUP waits here (``start_process``).
_held_signals: list[int] = []
_holding = [False]


#: A JSON list that stands for ``[sys.executable, "-m"]`` in ``module_command``: the smoke test
#: (tests/test_bench_smoke.py) gives its worker's preloader (tests/preload.py's launcher), so that the
#: processes a ``--quick`` run starts (e2e's bots, the MCP servers) are forked rather than started: a smoke
#: run's figures are not read. Unset: real starts. ``bench/startup.py``, which measures the start, never uses it.
LAUNCHER_ENV = "BENCH_PYTHON_LAUNCHER"


def module_command(module: str, *args: str) -> list[str]:
    """``[sys.executable, "-m", module, *args]``, or with what ``LAUNCHER_ENV`` gives for the first two."""
    given = os.environ.get(LAUNCHER_ENV)
    launcher = [str(word) for word in json.loads(given)] if given else [sys.executable, "-m"]
    return [*launcher, module, *args]


def end_children_when_killed() -> None:
    """SIGTERM and SIGHUP end a bench as Ctrl-C does, by raising KeyboardInterrupt: its ``finally`` blocks
    run and stop the processes it started (killed with the default handlers, a bench left its bot running)."""

    def interrupt(signum: int, frame: object) -> None:
        if _holding[0]:
            _held_signals.append(signum)
            return
        raise KeyboardInterrupt(f"signal {signum}")

    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, interrupt)


def start_process(started: list[subprocess.Popen], *args: Any, **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen``, appended to ``started`` before a SIGTERM or SIGHUP that came meanwhile is acted
    on: raised between the fork and the assignment of Popen's result, the KeyboardInterrupt left the process
    unknown to every ``finally``, and the bench left it running (seen under load in tests/test_bench_smoke.py).
    The caller's ``finally`` stops every process in ``started``. (Not a signal mask: the child inherits it.)"""
    _holding[0] = True
    try:
        proc = subprocess.Popen(*args, **kwargs)
        started.append(proc)
    finally:
        _holding[0] = False
    if _held_signals:
        raise KeyboardInterrupt(f"signal {_held_signals.pop()}")
    return proc


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM (the bot's orderly shutdown), then SIGKILL after 30 s, or at once when the bench itself is
    interrupted meanwhile (the process is never left running)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise


def write_config_dir(config: dict, folder: Path) -> Path:
    """The config dict as a config tree (``<section>.json`` per top-level key)."""
    folder.mkdir(parents=True, exist_ok=True)
    for section, value in config.items():
        (folder / f"{section}.json").write_text(json.dumps(value, indent=2), encoding="utf-8")
    return folder


def build_bot(config: dict, workspace_root: Path) -> Bot:
    """The bot over ``workspace_root``, built by ``build_runtime`` from a config tree."""
    from messaging_llm_bot.runtime import build_runtime

    config_dir = write_config_dir(config, workspace_root.parent / (workspace_root.name + "-config"))
    runtime = build_runtime(str(config_dir), str(workspace_root))
    return Bot(agent=runtime.agent, memory=runtime.memory, workspace=runtime.workspace, runtime=runtime)


#: Printed by the scripts that use ``fake_server``.
FAKE_SERVER_NOTE = (
    "fake server: TCP_NODELAY on its sockets (with Nagle's algorithm on, its separate header and body "
    "writes meet the client's delayed ACK: ~40 ms per call that no real server adds)"
)


def fake_server(latency: float = 0.0):
    """A started FakeChatServer with the given per-request latency (seconds).

    The fake sets TCP_NODELAY like real servers (uvicorn for vLLM, Go's net/http for Ollama):
    with Nagle's algorithm its separate header and body writes would wait for the client's
    delayed ACK (~40 ms on Linux), counted as model time and concurrency overhead.
    """
    from tests.fakes import chat_server

    return chat_server.FakeChatServer(latency=latency).start()
