"""Memory search: index build rate and query latency at 10k, 100k (and 1M) logged turns.

Synthetic L0 logs (``conversations/<id>/<date>.jsonl``, 20 conversations, 50 turns a day,
Zipf-distributed words) are written directly, then ``MemoryService.reindex()`` builds the
FTS5 index from the files (build rate = entries / second). The live path is timed too:
``log_turn`` appends a turn to the log and updates the index incrementally. Queries are two
content words drawn like the text ("what did I say about X and Y?"): ``search`` over
everything, and ``recall`` as the bot does it before each answer (one conversation's scope).

    python bench/memory_search.py            # 10k and 100k turns
    python bench/memory_search.py --full     # adds 1M turns
    python bench/memory_search.py --quick    # 500 and 2000 turns (smoke test)
    python bench/memory_search.py --paths    # 100k files + 1M turns: recall, skill search, unscoped search

``--paths`` times the three ways the bot searches, on the workspace of ``turn_overhead.py --full``
(100k note and collector files, 1M turns in 20 conversations): ``recall`` before each answer,
the ``memory_search`` skill (``search(within=chat)``: the chat plus owner data, 20x recall's
caps) and the CLI without ``--conversation`` (unscoped). ``--workspace DIR`` keeps the built
workspace there and reuses it on the next run (building takes about 4 minutes).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    bench_config,
    count_label,
    machine_line,
    ms,
    percentile,
    query_words,
    table,
    write_files,
    write_turns,
)

from assistant_framework.memory import MemoryService  # noqa: E402
from assistant_framework.workspace import Workspace  # noqa: E402


def measure(turns: int, queries: int, live_turns: int, base: Path) -> dict:
    """Build an index over ``turns`` logged turns and time queries and live appends."""
    root = base / f"ws-{turns}"
    started = time.monotonic()
    conversations = write_turns(root, turns)
    write_s = time.monotonic() - started
    service = MemoryService(Workspace(root), bench_config("http://127.0.0.1:9/v1"), start_worker=False)
    try:
        started = time.monotonic()
        entries = service.reindex()
        build_s = time.monotonic() - started
        size_mb = service.index.stats().bytes / 1e6
        rng = random.Random(11)
        search_s, recall_s, hits = [], [], 0
        for i in range(queries):
            first, second = query_words(rng)
            text = f"what did I say about {first} and {second}?"
            started = time.perf_counter()
            found = service.search(text, limit=10)
            search_s.append(time.perf_counter() - started)
            hits += bool(found)
            started = time.perf_counter()
            service.recall(text, conversations[i % len(conversations)])
            recall_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        for i in range(live_turns):
            service.log_turn(
                conversations[i % len(conversations)],
                "user" if i % 2 == 0 else "assistant",
                f"live turn {i} about {' and '.join(query_words(rng))}",
            )
        live_s = time.perf_counter() - started
    finally:
        service.close()
        shutil.rmtree(root, ignore_errors=True)
    return {
        "turns": turns,
        "entries": entries,
        "write_s": write_s,
        "build_s": build_s,
        "rate": entries / build_s if build_s else 0.0,
        "size_mb": size_mb,
        "search_p50": percentile(search_s, 50),
        "search_p95": percentile(search_s, 95),
        "recall_p50": percentile(recall_s, 50),
        "recall_p95": percentile(recall_s, 95),
        "hit_share": hits / max(1, queries),
        "live_rate": live_turns / live_s if live_s else 0.0,
    }


def measure_paths(root: Path, queries: int) -> list[list[str]]:
    """Recall, skill-scoped and unscoped search on a 100k-file / 1M-turn workspace (built once)."""
    conversations = [f"chat-{c:03d}" for c in range(20)]
    built = (root / "memory" / "index.sqlite3").exists()
    if not built:
        write_files(root, 100_000)
        conversations = write_turns(root, 1_000_000)
    service = MemoryService(Workspace(root), bench_config("http://127.0.0.1:9/v1"), start_worker=False)
    try:
        if not built or service.index.stats().entries == 0:  # new, or an index of another schema version (dropped)
            started = time.monotonic()
            service.reindex()
            print(f"  index built in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        rng = random.Random(5)
        texts = [f"what did I say about {' and '.join(query_words(rng))}?" for _ in range(queries)]
        service.recall(texts[0], conversations[0])  # first touch of the index pages
        times: dict[str, list[float]] = {"recall": [], "memory_search skill": [], "unscoped (CLI)": []}
        for i, text in enumerate(texts):
            chat = conversations[i % len(conversations)]
            for name, call in (
                ("recall", lambda text=text, chat=chat: service.recall(text, chat)),
                ("memory_search skill", lambda text=text, chat=chat: service.search(text, within=chat, limit=10)),
                ("unscoped (CLI)", lambda text=text: service.search(text, limit=10)),
            ):
                started = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - started)
        entries = service.index.stats().entries
    finally:
        service.close()
    print(f"{entries} index entries; {queries} queries (two Zipf-drawn content words each), each path in turn")
    return [[name, ms(percentile(v, 50)), ms(percentile(v, 99))] for name, v in times.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--full", action="store_true", help="add 1M turns")
    group.add_argument("--quick", action="store_true", help="500 and 2000 turns (smoke test)")
    group.add_argument(
        "--paths", action="store_true", help="recall, skill and unscoped search at 100k files + 1M turns"
    )
    parser.add_argument("--queries", type=int, default=None, help="queries per size (default 300, quick 20)")
    parser.add_argument(
        "--workspace", type=Path, default=None, help="with --paths: keep (and reuse) the workspace here"
    )
    args = parser.parse_args(argv)
    if args.paths:
        root = args.workspace or Path(tempfile.mkdtemp(prefix="bench-memory-paths-"))
        try:
            rows = measure_paths(root, args.queries or 100)
        finally:
            if args.workspace is None:
                shutil.rmtree(root, ignore_errors=True)
        print(machine_line())
        print(table(["path", "p50 ms", "p99 ms"], rows))
        return 0
    sizes = [500, 2_000] if args.quick else [10_000, 100_000, 1_000_000] if args.full else [10_000, 100_000]
    queries = args.queries or (20 if args.quick else 300)
    live = 20 if args.quick else 500
    base = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    rows = []
    try:
        for turns in sizes:
            rows.append(measure(turns, queries, live, base))
            print(f"  measured {count_label(turns)} turns", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(machine_line())
    print(f"{queries} queries per size (two Zipf-drawn content words each); {live} live log_turn calls per size")
    print(
        table(
            [
                "turns",
                "index entries",
                "build s",
                "build entries/s",
                "index MB",
                "search p50 ms",
                "search p95 ms",
                "recall p50 ms",
                "recall p95 ms",
                "queries with hits",
                "live log_turn/s",
            ],
            [
                [
                    count_label(r["turns"]),
                    r["entries"],
                    f"{r['build_s']:.1f}",
                    f"{r['rate']:.0f}",
                    f"{r['size_mb']:.1f}",
                    ms(r["search_p50"]),
                    ms(r["search_p95"]),
                    ms(r["recall_p50"]),
                    ms(r["recall_p95"]),
                    f"{r['hit_share']:.0%}",
                    f"{r['live_rate']:.0f}",
                ]
                for r in rows
            ],
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
