"""End to end: what a user waits for, through the real bot process, the fake Bot API and a model.

``python -m messaging_llm_bot`` runs as a subprocess against ``FakeBotAPI`` (which answers every
Bot API call at once and, unlike Telegram, enforces no rate limit: the bot's own limiter does)
and ``FakeChatServer`` answering after a set delay. A turn's time runs from pushing the user's
message into the fake until the call that shows the final reply text (``sendMessage``, or the
last ``editMessageText`` of a streamed reply) is answered; both times are taken in this process
on one clock. The floor is ``bench/e2e_floor.py``: a bare python-telegram-bot bot that forwards
each message to the same model server and sends the answer. The floor runs beside the bot, on fakes of its own,
and their sequential turns alternate (one of the floor's, one of the bot's): both are measured over the same
stretch of time, so a change in the machine's speed during the run moves both, not the ratio (``--apart``: the
floor's turns first, then the bot's, as before 2026-12-05).

Each row prints the figure, the ideal (where one exists) and their ratio, and the target. Below the table: the
bot's own CPU time per sequential turn (user + system, from /proc), which a shared machine moves less than
the wall times.

    python bench/e2e.py            # every row (about 2 minutes)
    python bench/e2e.py --quick    # fewer turns and chats, a fifth of the delays, one run per burst, no settle time
                                   # (smoke test)
    python bench/e2e.py --runs 5   # medians over 5 bursts
    python bench/e2e.py --single   # only the single-turn rows (the turn's own cost against the floor)
    python bench/e2e.py --apart    # the floor's sequential turns before the bot's, not alternating with them
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    ROOT,
    bench_config,
    end_children_when_killed,
    machine_line,
    module_command,
    percentile,
    stop_process,
    table,
    write_config_dir,
)

from tests.fakes.bot_api import FakeBotAPI  # noqa: E402
from tests.fakes.chat_server import FakeChatServer  # noqa: E402

TELEGRAM_RATE = 30.0  # calls a second: python-telegram-bot's AIORateLimiter default, Telegram's own limit
#: Seconds between sequential turns (more than one of Telegram's 30 sends a second): a turn's latency, not the
#: send rate. Back to back, the bot's rate limiter (which keeps Telegram's limit; the floor bot has none) paced
#: every turn after the first 30-40 at 33 ms, and that pacing, not the turn, set the single-turn p50.
TURN_GAP = 0.05
#: Seconds between the pieces of the streamed answer of the slow row (a fifth of it in --quick).
PIECE_GAP = 0.12
_QUESTION = re.compile(r"\bq(\d+)x(\d+)\b")
_FINAL_METHODS = ("sendMessage", "editMessageText")


class TimedBotAPI(FakeBotAPI):
    """FakeBotAPI that notes when each expected final reply text was first shown (monotonic clock)."""

    def __init__(self) -> None:
        super().__init__()
        self._expect: dict[str, list] = {}  # final text -> [event, time shown]
        self._expect_lock = threading.Lock()
        self.counts: dict[str, int] = {}

    def expect(self, text: str) -> threading.Event:
        with self._expect_lock:
            entry = self._expect.setdefault(text, [threading.Event(), None])
        return entry[0]

    def shown_at(self, text: str) -> float | None:
        with self._expect_lock:
            entry = self._expect.get(text)
            return None if entry is None else entry[1]

    def reset_counts(self) -> None:
        with self._expect_lock:
            self.counts = {}

    def _record(self, method: str, params: dict, status: int, message_id: int | None = None) -> None:
        now = time.monotonic()
        # Keep no call list: a long run would copy thousands of dicts on each lookup.
        with self._expect_lock:
            self.counts[method] = self.counts.get(method, 0) + 1
            if status == 200 and method in _FINAL_METHODS:
                entry = self._expect.get(str(params.get("text")))
                if entry is not None and entry[1] is None:
                    entry[1] = now
                    entry[0].set()
        if method == "getUpdates":
            with self._cond:
                self._calls.append({"method": method, "params": {}, "status": status, "at": now})
                del self._calls[:-5]


def reply_for(request: dict, suffix: str = "") -> str:
    """The fake model's answer: '{"reply": "a<chat>x<n> done<suffix>"}' for the question 'q<chat>x<n>'."""
    fmt = request.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}
    if "facts" in (schema.get("properties") or {}):  # fact extraction (a background call), not the chat's schema
        return '{"facts": []}'
    messages = request.get("messages") or []
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    match = _QUESTION.search(str(users[-1].get("content", ""))) if users else None
    tag = f"a{match.group(1)}x{match.group(2)}" if match else "a0x0"
    return json.dumps({"reply": f"{tag} done{suffix}"})


def answer_text(chat: int, n: int) -> str:
    return f"a{chat}x{n} done"


class Setup:
    """The two fakes for a whole run; bots come and go (one per configuration)."""

    def __init__(self, base: Path, settle: float = 1.0, notes: int = 0) -> None:
        self.base = base
        #: Notes in each bot's workspace before it starts: the owner's hand-edited files, which recall's refresh
        #: stats before every turn (an empty workspace has none).
        self.notes = notes
        #: Seconds left to a new bot's post-init calls and first long poll, and to the rate budget after a
        #: burst; 0 in --quick (a smoke test's figures are not read; the warm-up turns still wait for the bot).
        self.settle = settle
        self.model = FakeChatServer().start()
        self.model.set_handler(self._answer)
        self.api = TimedBotAPI().start()
        self.suffix = ""  # extra answer words
        self.chunk_delay = 0.0  # > 0: the answer streams in ~9 pieces this far apart
        self._counter = 0

    def _answer(self, request: dict) -> dict:
        content = reply_for(request, self.suffix)
        if self.chunk_delay and request.get("stream"):
            return {"content": content, "stream_chunks": _chunks(content), "chunk_delay": self.chunk_delay}
        return {"content": content}

    def stop(self) -> None:
        self.api.stop()
        self.model.stop()

    @contextmanager
    def bot(
        self, name: str, *, stream: bool, concurrency: int, extract_facts: bool = False, floor: bool = False
    ) -> Iterator[subprocess.Popen]:
        """Run the bot (or the floor bot) until the block ends; waits for its first getUpdates."""
        folder = self.base / name
        folder.mkdir()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if floor:
            cmd = module_command("bench.e2e_floor", self.api.token, self.api.base_url, self.model.base_url)
        else:
            config = bench_config(self.model.base_url, max_concurrency=concurrency, extract_facts=extract_facts)
            # "streaming on" as the shipped config has it: the model is asked for a stream (llm.stream) and the
            # message shows it (telegram.stream). With llm.stream off the streamed-answer row streamed nothing.
            config["llm"]["stream"] = stream
            config["telegram"] = {
                "token": self.api.token,
                "base_url": self.api.base_url,
                "base_file_url": self.api.base_file_url,
                "stream": stream,
                "allowed_user_ids": list(range(1, 101)),
            }
            write_notes(folder / "ws", self.notes)
            cmd = module_command(
                "messaging_llm_bot",
                "--config",
                str(write_config_dir(config, folder / "config")),
                "--workspace",
                str(folder / "ws"),
            )
        with self.api._cond:
            self.api._calls.clear()
        log_path = folder / "bot.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        try:
            deadline = time.monotonic() + 60
            while not self.api.calls("getUpdates"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{name}: the bot did not start:\n{log_path.read_text(errors='replace')[-2000:]}"
                    )
                time.sleep(0.02)
            time.sleep(self.settle)  # post-init calls, first long poll
            self.ask(1)  # warm-up: first model call, first connections
            self.ask(2)
            yield proc
        finally:
            stop_process(proc)

    def ask(self, chat: int, timeout: float = 60) -> float:
        """Send one question in ``chat``, wait for its final reply; the turn time in seconds."""
        pushed, shown = self.burst([chat], timeout)[0]
        return shown - pushed

    def burst(self, chats: list[int], timeout: float = 120) -> list[tuple[float, float]]:
        """One question in each chat at once; (pushed, shown) monotonic times of each turn."""
        pending = []
        for chat in chats:
            self._counter += 1
            text = answer_text(chat, self._counter) + self.suffix
            event = self.api.expect(text)
            pushed = time.monotonic()
            self.api.send_message(f"q{chat}x{self._counter} what is on my list?", user_id=chat)
            pending.append((text, event, pushed))
        out = []
        for text, event, pushed in pending:
            if not event.wait(timeout):
                raise TimeoutError(f"no reply {text!r} within {timeout:.0f} s")
            out.append((pushed, self.api.shown_at(text)))
        return out


def sequential(
    setup: Setup, turns: int, proc: subprocess.Popen | None = None, cpu: dict[str, float] | None = None, label: str = ""
) -> list[float]:
    """``turns`` turns one after another in chat 1, ``TURN_GAP`` apart; with ``proc`` and ``cpu``, ``cpu[label]``
    is the bot's own CPU time (user + system) per turn in seconds, where /proc tells it."""
    before = cpu_seconds(proc) if proc is not None else None
    times = []
    for _ in range(turns):
        times.append(setup.ask(1))
        time.sleep(TURN_GAP)
    after = cpu_seconds(proc) if proc is not None else None
    if cpu is not None and before is not None and after is not None:
        cpu[label] = (after - before) / turns
    return times


def beside(
    floor: Setup,
    bot: Setup,
    turns: int,
    procs: tuple[subprocess.Popen, subprocess.Popen],
    cpu: dict[str, float],
    labels: tuple[str, str],
) -> tuple[list[float], list[float]]:
    """``turns`` sequential turns of each of two bots, alternating (the floor's, then the bot's, ``TURN_GAP``
    apart), each in chat 1 of its own fakes: (the floor's times, the bot's). ``cpu[label]``: each process's CPU
    time per turn (the other's turns cost it nothing: it waits in its long poll)."""
    before = [cpu_seconds(proc) for proc in procs]
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(turns):
        for setup, out in zip((floor, bot), times, strict=True):
            out.append(setup.ask(1))
            time.sleep(TURN_GAP)
    for proc, label, start in zip(procs, labels, before, strict=True):
        end = cpu_seconds(proc)
        if start is not None and end is not None:
            cpu[label] = (end - start) / turns
    return times


def cpu_seconds(proc: subprocess.Popen) -> float | None:
    """The process's CPU time so far (user + system, its threads included), or None without /proc."""
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def burst_seconds(setup: Setup, chats: int, runs: int) -> list[float]:
    """Wall time from the first push to the last final reply, for ``runs`` bursts of ``chats`` chats."""
    spans = []
    for _run in range(runs):
        started = time.monotonic()
        times = setup.burst(list(range(1, chats + 1)))
        spans.append(max(shown for _, shown in times) - started)
        time.sleep(setup.settle)  # let background work and the rate budget settle between bursts
    return spans


def ideal_burst(chats: int, delay: float, concurrency: int) -> float:
    """Model waves at the given concurrency, or Telegram's send budget if that is longer."""
    return max(math.ceil(chats / concurrency) * delay, chats / TELEGRAM_RATE)


def fmt_s(value: float) -> str:
    return f"{value:.2f} s" if value >= 1 else f"{value * 1000:.0f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="5 turns, one run per burst, a fifth of the chats, no settle time (smoke)"
    )
    parser.add_argument("--turns", type=int, default=None, help="sequential turns per mode (default 100)")
    parser.add_argument("--runs", type=int, default=None, help="bursts per row, median reported (default 3)")
    parser.add_argument("--single", action="store_true", help="only the single-turn rows (no bursts)")
    parser.add_argument(
        "--notes", type=int, default=0, help="notes in the bot's workspace, in 20 folders (default 0: empty)"
    )
    parser.add_argument(
        "--apart", action="store_true", help="the floor's sequential turns first, then the bot's (not alternating)"
    )
    args = parser.parse_args(argv)
    end_children_when_killed()
    turns = args.turns or (5 if args.quick else 100)
    runs = args.runs or (1 if args.quick else 3)
    base = Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    setup = Setup(base, settle=0.0 if args.quick else 1.0, notes=args.notes)
    # The floor's own fakes, for its turns between the bot's (``beside``); --apart: the floor runs on ``setup``.
    floor_setup = setup
    if not args.apart:
        (base / "beside").mkdir()
        floor_setup = Setup(base / "beside", settle=0.0 if args.quick else 1.0)
    rows: list[list[str]] = []
    calls_per_reply: dict[str, str] = {}
    cpu: dict[str, float] = {}  # the bot's own CPU per sequential turn (seconds), by mode

    def add(figure: str, value: str, ideal: str, ratio: str, target: str) -> None:
        rows.append([figure, value, ideal, ratio, target])

    # (label, bot, chats, model delay s, concurrency, target); --quick keeps the shape at a tenth of the work:
    # a fifth of the delay and of the chats (50 chats are 1.7 s of Telegram's send budget).
    scale = 0.2 if args.quick else 1.0
    bursts = [
        ("c8", 6 if args.quick else 16, 0.5, 8, "<= 1.3 s"),
        ("c8", 10 if args.quick else 50, 0.2, 8, ""),
        ("c32", 10 if args.quick else 50, 0.2, 32, "<= 2.0 s"),
        ("c1", 4 if args.quick else 16, 0.5, 1, ""),
    ]
    if args.single:
        bursts = []
    spans: dict[int, list[float]] = {}
    floors: dict[str, list[float]] = {}  # the floor's turns, by the mode they alternated with ("": --apart)
    floor_bot = ExitStack()
    try:
        if args.apart:
            with setup.bot("floor", stream=False, concurrency=8, floor=True) as proc:
                floors[""] = sequential(setup, turns, proc, cpu, "floor")
        else:  # one floor process for both modes, idle in its long poll between them
            floor_proc = floor_bot.enter_context(floor_setup.bot("floor", stream=False, concurrency=8, floor=True))
        with setup.bot("stream-off", stream=False, concurrency=8) as proc:
            if args.apart:
                off = sequential(setup, turns, proc, cpu, "streaming off")
            else:
                floors["off"], off = beside(
                    floor_setup, setup, turns, (floor_proc, proc), cpu, ("floor beside off", "streaming off")
                )
        for name, stream, conc, extract in (("c8", True, 8, False), ("c32", True, 32, False), ("c1", True, 1, True)):
            if args.single and name != "c8":
                continue
            with setup.bot(name, stream=stream, concurrency=conc, extract_facts=extract) as proc:
                if name == "c8":
                    setup.api.reset_counts()
                    if args.apart:
                        on = sequential(setup, turns, proc, cpu, "streaming on")
                    else:
                        floors["on"], on = beside(
                            floor_setup, setup, turns, (floor_proc, proc), cpu, ("floor beside on", "streaming on")
                        )
                    floor_bot.close()  # the bursts below run without it
                    calls_per_reply["stream on, 1 chat"] = _per_reply(dict(setup.api.counts), turns)
                    setup.suffix, setup.chunk_delay = " " + " ".join(f"w{i}" for i in range(8)), PIECE_GAP * scale
                    slow = sequential(setup, max(1 if args.quick else 3, turns // 5))
                    setup.suffix, setup.chunk_delay = "", 0.0
                for k, (bot_name, chats, delay, _, _) in enumerate(bursts):
                    if bot_name != name:
                        continue
                    setup.model.latency = delay * scale
                    setup.api.reset_counts()
                    spans[k] = burst_seconds(setup, chats, 1 if (args.quick or bot_name == "c1") else runs)
                    calls_per_reply[f"{chats} chats, c={conc}"] = _per_reply(
                        dict(setup.api.counts), chats * len(spans[k])
                    )
                    setup.model.latency = 0.0
    except (RuntimeError, TimeoutError) as exc:
        print(f"e2e benchmark failed: {exc}", file=sys.stderr)
        return 1
    finally:
        floor_bot.close()
        setup.stop()
        if floor_setup is not setup:
            floor_setup.stop()
        shutil.rmtree(base, ignore_errors=True)

    for mode, times in floors.items():
        beside_mode = f", beside streaming {mode}" if mode else ""
        add(
            f"bare PTB bot (floor){beside_mode}, instant model, p50 / p99",
            f"{fmt_s(percentile(times, 50))} / {fmt_s(percentile(times, 99))}",
            "",
            "",
            "",
        )
    for mode, times in (("on", on), ("off", off)):
        floor50 = percentile(floors.get(mode) or floors[""], 50)
        p50, p99 = percentile(times, 50), percentile(times, 99)
        add(
            f"turn, instant model, streaming {mode}, p50 / p99",
            f"{fmt_s(p50)} / {fmt_s(p99)}",
            f"floor p50 {fmt_s(floor50)}",
            f"p50 {p50 / floor50:.1f}x floor; p99 {p99 / p50:.1f}x p50",
            "p50 <= 3x floor; p99 <= 2x p50",
        )
    slow50, slowmax = percentile(slow, 50), max(slow)
    # Nine pieces 0.12 s apart: the last one arrives 0.96 s after the first (the "1.08 s" answer);
    # --quick keeps the shape at a fifth of the gap.
    streamed = 8 * PIECE_GAP * scale
    add(
        f"turn, streamed answer of 9 pieces {PIECE_GAP * scale:g} s apart, p50 / max",
        f"{fmt_s(slow50)} / {fmt_s(slowmax)}",
        f"{streamed:g} s",
        f"{slow50 / streamed:.2f} / {slowmax / streamed:.2f}",
        "",
    )
    for k, (bot_name, chats, delay, conc, target) in enumerate(bursts):
        delay *= scale
        extra = ", fact extraction on" if bot_name == "c1" else ""
        ideal = ideal_burst(chats, delay, conc)
        median = statistics.median(spans[k])
        add(
            f"{chats} chats x {delay:g} s model, concurrency {conc}{extra}",
            f"{fmt_s(median)} (runs: {', '.join(f'{x:.2f}' for x in spans[k])})",
            fmt_s(ideal),
            f"{median / ideal:.2f}",
            target if not args.quick else "",
        )
    print(machine_line())
    print(
        "fake servers: TCP_NODELAY, headers and body in one write, listen backlog 256; FakeBotAPI enforces no "
        "rate limit (the bot's limiter does)"
    )
    print(
        f"bot: python -m messaging_llm_bot (Telegram, long polling, memory recall on, "
        f"{f'{args.notes} notes in its workspace' if args.notes else 'empty workspace'}) as a "
        f"subprocess; {turns} sequential turns per mode after 2 warm-up turns"
        f"{', the floor apart' if args.apart else ', alternating with the floor on fakes of its own'}; "
        f"bursts: median of {runs}"
    )
    print(table(["figure", "value", "ideal", "ratio", "target"], rows))
    if cpu:  # on a shared machine the CPU a turn costs moves less than its wall time
        print(
            "bot CPU per sequential turn (user + system): "
            + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in cpu.items())
        )
    print("Bot API calls per reply (besides getUpdates): " + "; ".join(f"{k}: {v}" for k, v in calls_per_reply.items()))
    return 0


def write_notes(workspace: Path, count: int) -> None:
    """``count`` short notes under ``workspace``/notes/, in 20 folders (a workspace the owner has written in)."""
    for i in range(count):
        folder = workspace / "notes" / f"topic{i % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nWhat was said about item {i}.\n", encoding="utf-8")


def _chunks(content: str) -> list[str]:
    """About ten pieces of ``content`` (streamed 0.12 s apart: ~1.08 s)."""
    step = max(1, math.ceil(len(content) / 9))
    return [content[i : i + step] for i in range(0, len(content), step)]


def _per_reply(counts: dict[str, int], replies: int) -> str:
    parts = [f"{m} {n / replies:.2f}" for m, n in sorted(counts.items()) if m != "getUpdates" and n]
    return ", ".join(parts) or "none"


if __name__ == "__main__":
    sys.exit(main())
