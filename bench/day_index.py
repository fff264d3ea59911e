"""A conversation-day's cost in the memory index: one turn indexed at a day of 20, 150 and 500 kB, and the
whole-day BM25 of a recall at 10k and 100k turns.

Indexing: a day of the given size is logged through ``MemoryService.log_turn``, then 40 more turns are appended
to it and each is indexed (``MemoryIndex.update_file``, as the memory worker does after a turn); the table gives
that thread's CPU (``time.thread_time``) per turn. Recall: ``bench/_common.write_turns`` logs (20 conversations,
50 turns a day), ``reindex()`` (its wall time is the rebuild), then 300 queries of two content words: the
candidates of one conversation's scope and of no scope (``bm25_candidates``), and the time of
``segment_scores`` over them (the whole-day BM25, stage 2's input). Runs against the tree it is imported from, so
an older tree is measured from a ``git archive`` copy with ``PYTHONPATH`` set to it.

    python bench/day_index.py            # 20/150/500 kB days, 10k and 100k turns
    python bench/day_index.py --quick    # 5/20 kB days, 500 turns (smoke test)
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import bench_config, machine_line, percentile, query_words, table, write_turns  # noqa: E402

from assistant_framework.memory import MemoryService  # noqa: E402
from assistant_framework.memory.candidates import bm25_candidates, segment_scores  # noqa: E402
from assistant_framework.memory.search import Scope, query_terms  # noqa: E402
from assistant_framework.workspace import Workspace  # noqa: E402

DAY = datetime(2026, 6, 3, tzinfo=timezone.utc)
TEXT = "we talked about the weather, the traffic on the ring road and what to cook for dinner tonight, number {n}"


def turn_cost(size_kb: int, base: Path, extra: int = 40) -> list[str]:
    """Turns in a day of ``size_kb`` kB, and the CPU ms of indexing one more turn (median, p90)."""
    svc = MemoryService(Workspace(base / f"day-{size_kb}"), {"runtime": {"timezone": "UTC"}}, start_worker=False)
    try:
        n = chars = 0
        while chars < size_kb * 1000:
            text = TEXT.format(n=n)
            chars, n = chars + len(text), n + 1
            svc.log_turn("alice", "user", text, time=DAY + timedelta(seconds=n))
        costs = []
        for _ in range(extra):
            n += 1
            rel, _row = svc.turns.append("alice", "user", TEXT.format(n=n), time=DAY + timedelta(seconds=n))
            started = time.thread_time()
            svc.index.update_file(rel)
            costs.append((time.thread_time() - started) * 1000)
    finally:
        svc.close()
    return [f"{size_kb} kB", f"{n - extra:,}", f"{statistics.median(costs):.2f}", f"{percentile(costs, 90):.2f}"]


def recall_cost(turns: int, queries: int, base: Path) -> list[str]:
    """The rebuild's seconds and the whole-day BM25's ms (p50, p95) scoped and unscoped at ``turns`` turns."""
    root = base / f"ws-{turns}"
    conversations = write_turns(root, turns)
    svc = MemoryService(Workspace(root), bench_config("http://127.0.0.1:9/v1"), start_worker=False)
    try:
        started = time.monotonic()
        svc.reindex()
        rebuild = time.monotonic() - started
        rng = random.Random(7)
        scoped, unscoped = [], []
        for _ in range(queries):
            terms = query_terms("what did I say about " + " and ".join(query_words(rng)))
            for scope, out in ((Scope(conversation=rng.choice(conversations)), scoped), (Scope(), unscoped)):
                found = bm25_candidates(svc.index, terms, scope, 200)
                started = time.perf_counter()
                segment_scores(svc.index, terms, found)
                out.append((time.perf_counter() - started) * 1000)
    finally:
        svc.close()
    return [
        f"{turns:,}",
        f"{rebuild:.1f}",
        f"{percentile(scoped, 50):.2f} / {percentile(scoped, 95):.2f}",
        f"{percentile(unscoped, 50):.2f} / {percentile(unscoped, 95):.2f}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 and 20 kB days, 500 turns (smoke test)")
    args = parser.parse_args(argv)
    days, sizes, queries = ([5, 20], [500], 20) if args.quick else ([20, 150, 500], [10_000, 100_000], 300)
    with tempfile.TemporaryDirectory(prefix="bench-day-index-") as tmp:
        base = Path(tmp)
        day_rows = [turn_cost(kb, base) for kb in days]
        recall_rows = [recall_cost(turns, queries, base) for turns in sizes]
    print(machine_line())
    print(table(["day", "turns in it", "one turn indexed, CPU ms p50", "p90"], day_rows))
    print()
    print(table(["turns", "rebuild s", "whole-day BM25 ms, recall p50 / p95", "unscoped p50 / p95"], recall_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
