"""Turn overhead: what the framework adds to a turn on top of the model's own time.

For each workspace size (files) and log size (L0 turns) a synthetic workspace is written,
its memory index built, then ``Agent.handle`` is called repeatedly against the
loopback fake model server (no latency, a plain JSON reply, so one model round per turn).
Memory recall is ON: it is part of the turn.

overhead = ``TurnResult.elapsed_s - TurnResult.model_s``: from ``handle`` being
called to the reply being ready, minus the client-side time of the Chat Completions calls
(``model_s``: from building the POST through the loopback HTTP exchange to the parsed JSON,
as measured by ``LLMClient``). "incl. trace" uses the wall time of the whole
``handle`` call instead, so it also counts the trace write and memory hand-off that
happen after the reply is ready.

    python bench/turn_overhead.py            # 1k files/10k turns and 10k files/100k turns
    python bench/turn_overhead.py --full     # adds 100k files/1M turns
    python bench/turn_overhead.py --quick    # a tiny size (smoke test)
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from messaging_llm_bot.agent.incoming import AgentMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    FAKE_SERVER_NOTE,
    bench_config,
    build_bot,
    count_label,
    fake_server,
    machine_line,
    ms,
    percentile,
    query_words,
    table,
    write_files,
    write_turns,
)

DEFAULT_SIZES = [(1_000, 10_000), (10_000, 100_000)]
FULL_SIZES = DEFAULT_SIZES + [(100_000, 1_000_000)]
QUICK_SIZES = [(30, 100), (100, 500)]
PHASES = ("recall", "L0 log", "history", "prompt", "trace")


def instrument(bot) -> dict[str, list[float]]:
    """Time the turn's phases by wrapping the bot's own objects; returns name -> durations."""
    phases: dict[str, list[float]] = {}

    def wrap(owner, attr: str, name: str, per_turn: int = 1) -> None:
        original = getattr(owner, attr)
        values = phases.setdefault(name, [])

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                values.append((time.perf_counter() - started) * per_turn)

        setattr(owner, attr, timed)

    agent = bot.agent
    if bot.memory is not None:
        wrap(bot.memory, "log_turn", "L0 log", per_turn=2)  # called twice a turn; shown per turn
        wrap(bot.memory, "recall", "recall")
    wrap(agent.prompt, "system_prompt", "prompt")
    wrap(agent.history, "append_pair", "history")
    # With background traces the turn only queues the trace; the write runs in the writer thread.
    wrap(agent.traces, "write_later" if getattr(agent, "background_traces", False) else "write", "trace")
    return phases


def measure(files: int, turns: int, messages: int, warmup: int, base: Path, server) -> dict:
    """Write a workspace of this size, build its index, and time ``messages`` turns."""
    root = base / f"ws-{files}-{turns}"
    started = time.monotonic()
    write_files(root, files)
    conversations = write_turns(root, turns)
    written_s = time.monotonic() - started
    config = bench_config(server.base_url, max_concurrency=1)
    bot = build_bot(config, root)
    started = time.monotonic()
    entries = bot.memory.reindex() if bot.memory is not None else 0
    index_s = time.monotonic() - started
    rng = random.Random(7)
    overhead, with_trace, recalled = [], [], 0
    phases = instrument(bot)
    try:
        for i in range(warmup + messages):
            conversation = conversations[i % len(conversations)]
            first, second = query_words(rng)
            text = f"what did I say about {first} and {second}?"
            called = time.perf_counter()
            result = bot.agent.handle(AgentMessage(conversation, text))
            wall = time.perf_counter() - called
            if not result.ok:
                raise RuntimeError(f"turn {i} at {files} files/{turns} turns failed: {result.reply}")
            if i < warmup:
                for values in phases.values():
                    values.clear()
                continue
            overhead.append(result.elapsed_s - result.model_s)
            with_trace.append(wall - result.model_s)
            recalled += bool(result.recalled)
    finally:
        bot.close()
        shutil.rmtree(root, ignore_errors=True)
    return {
        "files": files,
        "turns": turns,
        "entries": entries,
        "write_s": written_s,
        "index_s": index_s,
        "p50": percentile(overhead, 50),
        "p99": percentile(overhead, 99),
        "p50_trace": percentile(with_trace, 50),
        "p99_trace": percentile(with_trace, 99),
        "recall_share": recalled / max(1, len(overhead)),
        "phases": {name: percentile(values, 50) for name, values in phases.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--full", action="store_true", help="add the 100k files / 1M turns size")
    group.add_argument("--quick", action="store_true", help="tiny sizes, for the smoke test")
    parser.add_argument("--messages", type=int, default=None, help="measured turns per size (default 150, quick 20)")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES if args.full else DEFAULT_SIZES
    messages = args.messages or (20 if args.quick else 150)
    warmup = 5 if args.quick else 20
    results = []
    server = fake_server(latency=0.0)
    base = Path(tempfile.mkdtemp(prefix="bench-turn-"))
    try:
        for files, turns in sizes:
            results.append(measure(files, turns, messages, warmup, base, server))
            print(f"  measured {count_label(files)} files / {count_label(turns)} turns", file=sys.stderr, flush=True)
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(machine_line())
    print(FAKE_SERVER_NOTE)
    print(f"bot: build_runtime; {messages} turns per size after {warmup} warm-up turns; recall on")
    rows = [
        [
            count_label(r["files"]),
            count_label(r["turns"]),
            r["entries"],
            f"{r['index_s']:.1f}",
            ms(r["p50"]),
            ms(r["p99"]),
            ms(r["p50_trace"]),
            ms(r["p99_trace"]),
            f"{r['recall_share']:.0%}",
            *(ms(r["phases"].get(name, 0.0)) for name in PHASES),
        ]
        for r in results
    ]
    print(
        table(
            [
                "files",
                "turns",
                "index entries",
                "index build s",
                "overhead p50 ms",
                "overhead p99 ms",
                "incl. trace p50 ms",
                "incl. trace p99 ms",
                "turns with recall",
                *(f"{name} p50 ms" for name in PHASES),
            ],
            rows,
        )
    )
    ratio = results[-1]["p50"] / results[0]["p50"] if results[0]["p50"] > 0 else float("inf")
    print(
        f"largest/smallest p50 overhead: {ratio:.2f}x (target <= 2x); target at the largest size: p50 < 5 ms, p99 < "
        "20 ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
