"""Concurrency: 50 chats writing at once, a model that takes 200 ms per answer.

One thread per message calls ``Agent.handle``; the wall time from the first thread
start to the last reply is compared with the ideal for ``llm.max_concurrency`` = c:
``ceil(50 / c) x 0.2 s`` (whole batches of c model calls; the brief's 50 x 0.2 / c is the
same for c = 1 and 8 and unreachable for 32, where two batches are needed). The baseline
runs the same load through one global lock around ``handle`` (what a naive bot
does). The order variant sends 2 messages per chat (the second once the first is queued)
and checks that the model saw message 1 before message 2 and that message 2's request
carries message 1 and its reply in the history.

    python bench/concurrency.py            # c = 1, 8, 32 and the global-lock baseline at c = 8
    python bench/concurrency.py --full     # also the baseline at every c
    python bench/concurrency.py --quick    # 6 chats, 20 ms latency (smoke test)
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from messaging_llm_bot.agent.incoming import AgentMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import FAKE_SERVER_NOTE, bench_config, build_bot, fake_server, machine_line, table  # noqa: E402

_MESSAGE = re.compile(r"^(chat-\d+) message (\d+)")


def first_line_of_last_user(request: dict) -> str:
    messages = request.get("messages") or []
    for message in reversed(messages):
        if message.get("role") == "user":
            return str(message.get("content") or "").split("\n", 1)[0]
    return ""


def run_load(bot, chats: int, per_chat: int, global_lock: bool) -> float:
    """Send ``per_chat`` messages in each of ``chats`` chats at once; returns the wall time."""
    agent = bot.agent
    gate = threading.Lock()
    failures: list[str] = []

    def send(chat: str, n: int) -> None:
        text = f"{chat} message {n}"
        if global_lock:
            with gate:
                result = agent.handle(AgentMessage(chat, text))
        else:
            result = agent.handle(AgentMessage(chat, text))
        if not result.ok:
            failures.append(f"{text}: {result.reply}")

    threads = []
    started = time.perf_counter()
    for c in range(chats):
        chat = f"chat-{c:03d}"
        for n in range(1, per_chat + 1):
            if n > 1:
                # The next message of a chat arrives once the previous one is queued or running.
                deadline = time.monotonic() + 10
                while agent.pending(chat) < n - 1 and time.monotonic() < deadline and not global_lock:
                    time.sleep(0.0005)
            thread = threading.Thread(target=send, args=(chat, n), daemon=True)
            thread.start()
            threads.append(thread)
    for thread in threads:
        thread.join(timeout=300)
    wall = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"{len(failures)} turns failed, first: {failures[0]}")
    return wall


def order_kept(requests: list[dict], chats: int) -> int:
    """Chats whose message 1 reached the model before message 2, with message 1 in 2's history."""
    seen: dict[str, list[tuple[int, dict]]] = {}
    for request in requests:
        found = _MESSAGE.match(first_line_of_last_user(request))
        if found:
            seen.setdefault(found.group(1), []).append((int(found.group(2)), request))
    kept = 0
    for chat, items in seen.items():
        numbers = [n for n, _ in items]
        if numbers != sorted(numbers) or len(numbers) < 2:
            continue
        second = items[-1][1]
        contents = [str(m.get("content") or "") for m in second.get("messages") or []]
        if any(c.startswith(f"{chat} message 1") for c in contents[:-1]):
            kept += 1
    return kept


def scenario(
    server,
    base: Path,
    name: str,
    concurrency: int,
    chats: int,
    per_chat: int,
    global_lock: bool,
    *,
    extract_facts: bool = False,
) -> dict:
    """One load on a fresh workspace and bot; returns the figures of one table row."""
    root = base / name.replace(" ", "_").replace(",", "")
    bot = build_bot(bench_config(server.base_url, max_concurrency=concurrency, extract_facts=extract_facts), root)
    server.reset()
    try:
        wall = run_load(bot, chats, per_chat, global_lock)
        requests = [r for r in server.chat_requests if _MESSAGE.match(first_line_of_last_user(r))]
    finally:
        bot.close()
        shutil.rmtree(root, ignore_errors=True)
    batches = math.ceil(chats * per_chat / concurrency) if not global_lock else chats * per_chat
    if per_chat > 1 and not global_lock:
        # Messages of one chat are serial: each chat needs per_chat rounds at least.
        batches = max(batches, per_chat)
    ideal = batches * server.latency
    return {
        "name": name,
        "concurrency": concurrency,
        "messages": chats * per_chat,
        "wall": wall,
        "ideal": ideal,
        "ratio": wall / ideal if ideal else float("inf"),
        "order": f"{order_kept(requests, chats)}/{chats}" if per_chat > 1 else "-",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--full", action="store_true", help="run the global-lock baseline at every concurrency")
    group.add_argument("--quick", action="store_true", help="6 chats, 20 ms latency, for the smoke test")
    args = parser.parse_args(argv)
    chats, latency = (6, 0.02) if args.quick else (50, 0.2)
    levels = (1, 4) if args.quick else (1, 8, 32)
    order_levels = levels[1:] if args.quick else levels
    baseline_levels = levels if args.full else levels[1:2]
    server = fake_server(latency=latency)
    base = Path(tempfile.mkdtemp(prefix="bench-conc-"))
    rows = []
    try:
        for c in levels:
            rows.append(scenario(server, base, f"per-chat locks c={c}", c, chats, 1, False))
            print(f"  done per-chat c={c}", file=sys.stderr, flush=True)
        for c in order_levels:
            rows.append(scenario(server, base, f"per-chat locks, 2 msgs/chat c={c}", c, chats, 2, False))
            print(f"  done order c={c}", file=sys.stderr, flush=True)
        for c in baseline_levels:
            rows.append(scenario(server, base, f"global lock (baseline) c={c}", c, chats, 1, True))
            print(f"  done baseline c={c}", file=sys.stderr, flush=True)
        if not args.quick:
            # memory.extract_facts (on by default) makes one more model call per turn in the background.
            rows.append(
                scenario(server, base, "per-chat locks c=8, fact extraction on", 8, chats, 1, False, extract_facts=True)
            )
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(machine_line())
    print(FAKE_SERVER_NOTE)
    print(
        f"{chats} chats, model latency {latency * 1000:.0f} ms (fake server), memory recall on; ideal = ceil(messages "
        "/ c) x latency"
    )
    print(
        table(
            ["scenario", "llm.max_concurrency", "messages", "wall s", "ideal s", "wall / ideal", "order kept (chats)"],
            [
                [
                    r["name"],
                    r["concurrency"],
                    r["messages"],
                    f"{r['wall']:.2f}",
                    f"{r['ideal']:.2f}",
                    f"{r['ratio']:.2f}",
                    r["order"],
                ]
                for r in rows
            ],
        )
    )
    print("target: wall / ideal <= 1.20 at c = 8 and 32")
    return 0


if __name__ == "__main__":
    sys.exit(main())
