"""The turn thread's CPU for one long streamed answer: SSE parsing, the streaming guard, the delta events.

One turn through ``Agent.handle`` (built by ``build_runtime``, streaming on, memory off) against the loopback
fake model server, which streams an answer of ``--chars`` characters in ``--delta``-character pieces. The turn
runs in this thread, so ``time.thread_time`` counts its CPU alone (the fake server's threads are apart).
"guard" is the part spent in ``StreamGuard.feed``; "reading" the rest of the turn (the client's socket
reads, SSE lines and chunk JSON, the delta events, the turn's own work before and after the stream).

Two shapes: plain prose (shown as is) and a ``{"reply": "..."}`` object (shown as its decoded string).

    python bench/stream_cpu.py                       # 30,000 characters in 5-character deltas
    python bench/stream_cpu.py --chars 300000        # longer (before the linear guard: over 30 s, timed out)
    python bench/stream_cpu.py --quick               # 3,000 characters (a smoke test)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import FAKE_SERVER_NOTE, bench_config, build_bot, fake_server, machine_line, table  # noqa: E402

from messaging_llm_bot.agent.incoming import AgentMessage  # noqa: E402
from messaging_llm_bot.protocol import stream as guard_module  # noqa: E402


def prose(chars: int) -> str:
    """Ordinary answer text: sentences, a list, an inline code span, a link; no JSON."""
    words = "the quick brown fox jumps over a lazy dog while it is sunny in Paris today".split()
    out: list[str] = []
    total, i = 0, 0
    while total < chars:
        line = " ".join(words[(i + k) % len(words)] for k in range(12)) + (".\n" if i % 5 else ".\n- `item` (x)\n")
        out.append(line)
        total += len(line)
        i += 1
    return "".join(out)[:chars]


def reply_object(chars: int) -> str:
    body = prose(chars - 14).replace("\n", "\\n").replace("`", "'")[: chars - 14]
    return '{"reply": "' + body + '"}'


class GuardClock:
    """Adds up the thread CPU spent in ``StreamGuard.feed`` (wrapped for the run, restored after)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._feed = guard_module.StreamGuard.feed

    def __enter__(self) -> GuardClock:
        original = self._feed

        def timed(guard: guard_module.StreamGuard, text: str) -> str | None:
            started = time.thread_time()
            try:
                return original(guard, text)
            finally:
                self.seconds += time.thread_time() - started
                self.calls += 1

        guard_module.StreamGuard.feed = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        guard_module.StreamGuard.feed = self._feed  # type: ignore[method-assign]


def run(bot, server, text: str, delta: int) -> tuple[float, float, int, str]:
    pieces = [text[i : i + delta] for i in range(0, len(text), delta)]
    server.enqueue({"content": text, "stream_chunks": pieces})
    deltas = [0]

    def on_event(event) -> None:  # what a channel's sink does with a delta: keep the newest text
        if event.kind == "delta":
            deltas[0] += 1

    with GuardClock() as clock:
        started = time.thread_time()
        result = bot.agent.handle(AgentMessage("bench:stream", "write a long answer", on_event=on_event, stream=True))
        total = time.thread_time() - started
    if not result.ok:
        raise RuntimeError(f"the turn failed: {result.reply}")
    return total, clock.seconds, deltas[0], result.reply


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, default=30_000, help="the answer's length (default 30000)")
    parser.add_argument("--delta", type=int, default=5, help="characters per streamed delta (default 5)")
    parser.add_argument("--quick", action="store_true", help="3,000 characters (a smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.chars = 3_000
    print(machine_line())
    print(FAKE_SERVER_NOTE)
    server = fake_server()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = bench_config(server.base_url, memory=False)
            config["llm"]["stream"] = True
            bot = build_bot(config, Path(tmp) / "workspace")
            try:
                run(bot, server, "warm up " * 20, args.delta)
                for name, text in (("prose", prose(args.chars)), ("reply object", reply_object(args.chars))):
                    total, guard, deltas, reply = run(bot, server, text, args.delta)
                    rows.append(
                        [
                            name,
                            f"{len(text):,}",
                            f"{len(text) // args.delta:,}",
                            f"{deltas:,}",
                            f"{total * 1000:,.0f}",
                            f"{guard * 1000:,.0f}",
                            f"{(total - guard) * 1000:,.0f}",
                            f"{len(reply):,}",
                        ]
                    )
            finally:
                bot.close()
    finally:
        server.stop()
    headers = ["answer", "chars", "deltas", "shown", "turn CPU ms", "guard ms", "reading ms", "reply chars"]
    print(table(headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
