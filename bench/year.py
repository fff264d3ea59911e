"""A year of use: the files a running bot appends to, at a year's size, timed through the real paths.

A workspace is written as a year of use leaves it (``--days``, default 365): the owner's Telegram chat at 50
turns a day (the L0 log, one file a day), 20 job runs a day in ``jobs/runs.jsonl`` (as its cap leaves it), 5
mails a day in ``mail/sent.jsonl``, the three collectors' ``runs.jsonl`` at their example intervals (mail every
10 minutes, calendar 15, feeds 30), a skill call a turn in ``state/audit.jsonl``, a usage line a turn in
``state/usage/<month>.jsonl``, the web chat's message store (``state/webchat/messages.jsonl``: the same 50
turns a day, as if the owner chatted there), two files sent a day (``state/files_out.jsonl``), an episode a
day, a terminal line history. Then, each beside the same on an empty workspace:

- ``assistant memory reindex`` (what a lost index costs; built once, before the bot starts);
- the bot process (``python -m messaging_llm_bot``, Telegram on FakeBotAPI, the model FakeChatServer answering
  at once): start to first getUpdates, start to the first answer (a message waiting at start), one turn
  (median of 5), resident memory after;
- ``assistant jobs list --json``;
- the web page (``assistant web``): each main view's JSON twin, median of 3 requests;
- in process: the bot's memory per conversation (``--conversations`` mail threads, topics or sessions of 6 turns
  of 2,400 characters each, its history full), the mail skill's and ``send_file``'s once-checks, the web chat's
  message store read at start (and the entries its once-map keeps), a job run's once-check (``RunLog.has_run``).

    python bench/year.py            # 365 days
    python bench/year.py --quick    # 7 days (smoke test)
    python bench/year.py --days 730
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
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

from assistant_framework.workspace import Workspace  # noqa: E402
from tests.fakes.bot_api import FakeBotAPI  # noqa: E402

OWNER = 1
TURNS_PER_DAY = 50
JOB_RUNS_PER_DAY = 20
MAILS_PER_DAY = 5
FILES_PER_DAY = 2
#: The example config's collector intervals, in minutes.
COLLECTOR_MINUTES = {"mail": 10, "calendar": 15, "rss": 30}
WEB_TOKEN = "year-bench-token-0123456789abcdef0123456789"
WEB_VIEWS = ("/api/conversations", "/api/collectors", "/api/jobs", "/api/usage", "/api/traces", "/api/reminders")
WORDS = (
    "milk bread garden dentist invoice train berlin paris meeting project deadline budget birthday coffee "
    "running yoga piano guitar doctor insurance taxes holiday flight hotel weather recipe pasta salad"
).split()


def _text(n: int, words: int = 14) -> str:
    return " ".join(WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(words))


def _lines(path: Path, rows) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, separators=(",", ":"), ensure_ascii=False) + "\n")
            count += 1
    return count


def write_year(ws: Path, days: int, end: datetime) -> dict[str, int]:
    """The files a year of use leaves (see the module's docstring); returns their sizes in bytes."""
    start = end - timedelta(days=days)
    conv = ws / "conversations" / "tg_1"
    conv.mkdir(parents=True, exist_ok=True)
    for d in range(days):
        day = start + timedelta(days=d)
        rows = []
        for n in range(2 * TURNS_PER_DAY):
            moment = day + timedelta(minutes=10 * n)
            rows.append(
                {
                    "time": moment.isoformat(timespec="seconds"),
                    "conversation": "tg:1",
                    "role": "user" if n % 2 == 0 else "assistant",
                    "text": _text(d * 100 + n, 14 if n % 2 == 0 else 40),
                    "message_id": d * 100 + n,
                    "turn_id": f"tg_1:{day.date().isoformat()}:{n}",
                }
            )
        _lines(conv / f"{day.date().isoformat()}.jsonl", rows)
        episode = ws / "memory" / "episodes" / "tg_1" / f"{day.date().isoformat()}.md"
        episode.parent.mkdir(parents=True, exist_ok=True)
        episode.write_text(f"# {day.date().isoformat()}\n\n{_text(d, 60)}\n", encoding="utf-8")

    def minutes(every: int):
        moment = start
        while moment < end:
            yield moment
            moment += timedelta(minutes=every)

    jobs = [
        {
            "id": f"j{i}",
            "name": f"job {i}",
            "every_minutes": 24 * 60 * 4 // JOB_RUNS_PER_DAY,
            "message": "ping",
            "created_at": start.isoformat(timespec="seconds"),
        }
        for i in range(1, 5)
    ]
    (ws / "jobs").mkdir(parents=True, exist_ok=True)
    (ws / "jobs" / "jobs.json").write_text(json.dumps(jobs, indent=1), encoding="utf-8")
    runs = [
        {
            "run": f"job:j{1 + i % 4}:{m.strftime('%Y%m%dT%H%M%SZ')}",
            "job": f"j{1 + i % 4}",
            "name": f"job {1 + i % 4}",
            "kind": "message",
            "planned": m.isoformat(),
            "started": m.isoformat(),
            "finished": m.isoformat(),
            "outcome": "delivered",
            "late": False,
            "message_ids": [i],
        }
        for i, m in enumerate(minutes(24 * 60 // JOB_RUNS_PER_DAY))
    ]
    _lines(ws / "jobs" / "runs.jsonl", runs[-5000:])  # what RunLog's cap keeps
    sent = []
    for i, m in enumerate(minutes(24 * 60 // MAILS_PER_DAY)):
        key = hashlib.sha256(str(i).encode()).hexdigest()[:32]
        stamp = m.strftime("%Y-%m-%d-%H%M%S")
        row = {
            "key": key,
            "scope": f"tg:1:{i}",
            "kind": "send",
            "target": "anna@example.org",
            "wording": key,
            "time": m.isoformat(),
            "to": ["anna@example.org"],
            "subject": f"Re: {_text(i, 5)}",
            "file": f"mail/sent/{stamp}-{key[:8]}.eml",
            "message_id": f"<{key[:16]}@example.org>",
        }
        sent += [
            {**row, "status": "begun"},
            {"key": key, "scope": row["scope"], "kind": "send", "target": row["target"], "status": "done"},
        ]
    _lines(ws / "mail" / "sent.jsonl", sent)
    for name, every in COLLECTOR_MINUTES.items():
        _lines(
            ws / "collectors" / name / "runs.jsonl",
            (
                {
                    "started": m.isoformat(timespec="seconds"),
                    "duration_s": 0.4,
                    "outcome": "ok",
                    "error": None,
                    "new": i % 3,
                    "written": [f"collectors/{name}/item-{i}.md"] if i % 3 else [],
                    "summary": f"{i % 3} new: {_text(i, 8)}",
                    "errors": [],
                }
                for i, m in enumerate(minutes(every))
            ),
        )
    turns = list(minutes(24 * 60 // TURNS_PER_DAY))
    _lines(
        ws / "state" / "audit.jsonl",
        (
            {
                "time": m.isoformat(),
                "conversation": "tg:1",
                "skill": "notes",
                "decision": "allow",
                "args": {"action": "search", "query": _text(i, 3)},
                "ok": True,
            }
            for i, m in enumerate(turns)
        ),
    )
    by_month: dict[str, list[dict]] = {}
    for m in turns:
        by_month.setdefault(m.strftime("%Y-%m"), []).append(
            {
                "time": m.isoformat(),
                "requests": [
                    {"model": "fake-model", "runner": "fake", "prompt_tokens": 2400, "completion_tokens": 120}
                ],
            }
        )
    for month, rows in by_month.items():
        _lines(ws / "state" / "usage" / f"{month}.jsonl", rows)
    messages = []
    for i, m in enumerate(turns):
        messages.append({"id": 2 * i + 1, "role": "owner", "text": _text(i), "at": m.isoformat()})
        messages.append(
            {
                "id": 2 * i + 2,
                "role": "assistant",
                "text": _text(i, 40),
                "at": m.isoformat(),
                "key": f"web:{i}",
                "part": 0,
            }
        )
    _lines(ws / "state" / "webchat" / "messages.jsonl", messages)
    files = []
    for i, m in enumerate(minutes(24 * 60 // FILES_PER_DAY)):
        record = {
            "key": hashlib.sha256(f"f{i}".encode()).hexdigest(),
            "path": f"notes/n{i}.md",
            "chat": "tg:1",
            "time": m.isoformat(),
        }
        files += [{**record, "status": "sending"}, {**record, "status": "sent", "message_id": i}]
    _lines(ws / "state" / "files_out.jsonl", files)
    history = ws / "state" / "console_history"
    history.write_text("".join(f"\n# {m.isoformat()}\n+{_text(i)}\n" for i, m in enumerate(turns)), encoding="utf-8")
    sizes = {}
    for rel in (
        "conversations",
        "jobs/runs.jsonl",
        "mail/sent.jsonl",
        "collectors/mail/runs.jsonl",
        "state/audit.jsonl",
        "state/usage",
        "state/webchat/messages.jsonl",
        "state/files_out.jsonl",
        "memory/episodes",
        "state/console_history",
    ):
        path = ws / rel
        sizes[rel] = (
            sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size
        )
    return sizes


def cli(*args: str, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "messaging_llm_bot.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    return time.perf_counter() - started, done


def wait(predicate, timeout: float, what: str, proc: subprocess.Popen, step: float = 0.005):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if proc.poll() is not None:
            raise RuntimeError(f"the bot exited ({proc.returncode}) while waiting for {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {timeout:.0f} s")
        time.sleep(step)
    return value


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def answered(fake: FakeBotAPI) -> int:
    return sum(1 for call in fake.calls("sendMessage") if call.get("status") == 200)


def time_bot(config: dict, cfg: Path, ws: Path, env: dict, log_path: Path, turns: int) -> dict[str, float]:
    """Start to first getUpdates, to the first answer (a message waiting), one turn's median, VmRSS after."""
    fake = FakeBotAPI().start()
    children: list[subprocess.Popen] = []
    try:
        config = json.loads(json.dumps(config))
        config["telegram"] = {
            "token": fake.token,
            "base_url": fake.base_url,
            "base_file_url": fake.base_file_url,
            "allowed_user_ids": [OWNER],
        }
        write_config_dir(config, cfg)
        fake.send_message("what is on my list today?", user_id=OWNER)
        with log_path.open("ab") as log:
            started = time.perf_counter()
            proc = start_process(
                children,
                [sys.executable, "-m", "messaging_llm_bot", "--config", str(cfg), "--workspace", str(ws)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            wait(fake.polls_started, 120, "getUpdates", proc)
            first_poll = time.perf_counter() - started
            wait(lambda: answered(fake) >= 1, 120, "first answer", proc)
            first_answer = time.perf_counter() - started
        times = []
        for i in range(turns):
            before = answered(fake)
            sent = time.perf_counter()
            fake.send_message(f"and tomorrow {i}?", user_id=OWNER)
            wait(lambda before=before: answered(fake) > before, 60, "an answer", proc)
            times.append(time.perf_counter() - sent)
        return {"poll": first_poll, "answer": first_answer, "turn": statistics.median(times), "rss": rss_mb(proc.pid)}
    finally:
        for proc in children:
            stop_process(proc)
        fake.stop()


def time_web(cfg: Path, ws: Path, env: dict, log_path: Path) -> dict[str, float]:
    """Each main view's JSON twin on ``assistant web``: median of 3 requests after one untimed."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    children: list[subprocess.Popen] = []
    out: dict[str, float] = {}
    try:
        with log_path.open("ab") as log:
            proc = start_process(
                children,
                [
                    sys.executable,
                    "-m",
                    "messaging_llm_bot.cli",
                    "web",
                    "--config",
                    str(cfg),
                    "--workspace",
                    str(ws),
                    "--port",
                    str(port),
                ],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

        def get(path: str) -> bytes:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {WEB_TOKEN}"}
            )
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.read()

        def up() -> bool:
            try:
                get("/api/jobs")
                return True
            except OSError:
                return False

        wait(up, 60, "the web page", proc, step=0.1)
        for view in WEB_VIEWS:
            get(view)
            times = []
            for _ in range(3):
                started = time.perf_counter()
                get(view)
                times.append(time.perf_counter() - started)
            out[view] = statistics.median(times)
    finally:
        for proc in children:
            stop_process(proc)
    return out


def time_in_process(ws: Path) -> dict[str, float]:
    """The once-checks and the web chat's store as the bot calls them, on this workspace."""
    from assistant_framework.jobs.runs import RunLog
    from assistant_framework.skills.once import Action, ActionLedger, TurnActions, TurnRun
    from messaging_llm_bot.channels.webchat.transcript import Transcript

    workspace = Workspace(str(ws))

    def timed(fn, repeat: int = 5) -> float:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            fn()
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    run = TurnRun("tg:1:a-new-message", TurnActions())
    mail = Action("send", "anna@example.org", {"subject": "Re: Friday", "body": "I will come."})
    file = Action("file", "notes/today.md", {"caption": ""})
    transcript: list[Transcript] = []
    return {
        "mail": timed(lambda: ActionLedger(workspace, "mail/sent.jsonl").earlier(run, mail)),
        "files_out": timed(lambda: ActionLedger(workspace, "state/files_out.jsonl").earlier(run, file)),
        "runs": timed(lambda: RunLog(workspace).has_run("job:j1:19990101T000000Z")),
        "transcript": timed(lambda: transcript.append(Transcript(workspace))),
        "transcript_map": float(len(transcript[-1]._parts)) if transcript else 0.0,
    }


def memory_per_conversation(conversations: int, turns: int) -> tuple[float, int]:
    """The bot's resident memory grown per conversation answered (kB; the fake model's record of requests emptied
    before each reading), and the histories its cache holds after."""
    import gc
    import logging

    from _common import build_bot

    from messaging_llm_bot.agent.incoming import AgentMessage

    def rss_kb() -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    model = fake_server(latency=0.0)
    base = Path(tempfile.mkdtemp(prefix="bench-year-conv-"))
    bot = build_bot(bench_config(model.base_url), base / "ws")
    # The fake answers the summaries of dropped turns with a plain reply: their warnings are not this figure's.
    logging.getLogger("assistant_framework.memory.batching").setLevel(logging.ERROR)
    try:

        def answer(prefix: str) -> None:
            for turn in range(turns):
                for n in range(conversations):
                    text = f"Dear Anna {turn}, about the meeting on Friday " * 60
                    bot.agent.handle(AgentMessage(f"{prefix}-{n}", text, chat_id=OWNER, user_id=OWNER))
                model._records.clear()

        answer("warm")  # the first conversations' one-time costs (imports, pools) are not counted
        time.sleep(2)
        gc.collect()
        before = rss_kb()
        answer("mail:thread")
        time.sleep(2)
        gc.collect()
        return (rss_kb() - before) / conversations, len(bot.agent.history._cache)
    finally:
        bot.close()
        model.stop()
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365, help="days of use written (default 365)")
    parser.add_argument("--quick", action="store_true", help="7 days, 1 turn, 10 conversations (smoke test)")
    parser.add_argument(
        "--conversations", type=int, default=300, help="conversations for the memory figure (default 300)"
    )
    args = parser.parse_args(argv)
    end_children_when_killed()
    days = 7 if args.quick else args.days
    turns = 1 if args.quick else 5
    base = Path(tempfile.mkdtemp(prefix="bench-year-"))
    model = fake_server(latency=0.0)
    conversations = 10 if args.quick else args.conversations
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    log_path = base / "log.txt"
    results: dict[str, dict] = {}
    try:
        config = bench_config(model.base_url, max_concurrency=2)
        config["memory"]["refresh_seconds"] = 60
        web_config = {**config, "web": {"token": WEB_TOKEN}}
        for label in ("empty", "year"):
            ws = base / f"ws-{label}"
            Workspace(str(ws))  # the layout the bot makes
            started = time.perf_counter()
            sizes = write_year(ws, days, datetime.now(UTC).replace(microsecond=0)) if label == "year" else {}
            written = time.perf_counter() - started
            cfg = write_config_dir(web_config, base / f"cfg-{label}")
            for name in COLLECTOR_MINUTES:
                (cfg / "collectors").mkdir(exist_ok=True)
                (cfg / "collectors" / f"{name}.json").write_text(
                    json.dumps({"enabled": True, **({"feeds": ["http://127.0.0.1:9/feed"]} if name == "rss" else {})})
                )
            reindex_s, done = cli("memory", "reindex", "--config", str(cfg), "--workspace", str(ws), env=env)
            if done.returncode != 0:
                raise RuntimeError(f"memory reindex failed: {done.stderr[-500:]}")
            jobs_s, done = cli("jobs", "list", "--json", "--config", str(cfg), "--workspace", str(ws), env=env)
            if done.returncode not in (0, 1):
                raise RuntimeError(f"jobs list failed: {done.stderr[-500:]}")
            results[label] = {
                "sizes": sizes,
                "written": written,
                "reindex": reindex_s,
                "jobs": jobs_s,
                "web": time_web(cfg, ws, env, log_path),
                "inproc": time_in_process(ws),
                "bot": time_bot(config, base / f"cfg-bot-{label}", ws, env, log_path, turns),
            }
        per_conversation, cached = memory_per_conversation(conversations, 1 if args.quick else 6)
    except (RuntimeError, TimeoutError) as exc:
        tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
        print(f"year benchmark failed: {exc}\n--- log tail ---\n{tail}", file=sys.stderr)
        return 1
    finally:
        model.stop()
        shutil.rmtree(base, ignore_errors=True)
    empty, year = results["empty"], results["year"]
    print(machine_line())
    print(FAKE_SERVER_NOTE)
    print(f"workspace: {days} days of use (written in {year['written']:.1f} s); sizes:")
    print(table(["file", "size"], [[rel, f"{size / 1e6:.1f} MB"] for rel, size in year["sizes"].items()]))
    print()

    def secs(value: float) -> str:
        return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"

    rows = [
        ["assistant memory reindex", secs(empty["reindex"]), secs(year["reindex"])],
        ["bot: process start to first getUpdates", secs(empty["bot"]["poll"]), secs(year["bot"]["poll"])],
        ["bot: process start to the first answer", secs(empty["bot"]["answer"]), secs(year["bot"]["answer"])],
        [f"bot: one turn (median of {turns})", secs(empty["bot"]["turn"]), secs(year["bot"]["turn"])],
        ["bot: resident memory after (VmRSS)", f"{empty['bot']['rss']:.0f} MB", f"{year['bot']['rss']:.0f} MB"],
        ["assistant jobs list --json", secs(empty["jobs"]), secs(year["jobs"])],
        *[[f"web: GET {view}", secs(empty["web"][view]), secs(year["web"][view])] for view in WEB_VIEWS],
        ["mail skill's once-check (mail/sent.jsonl)", secs(empty["inproc"]["mail"]), secs(year["inproc"]["mail"])],
        [
            "send_file's once-check (state/files_out.jsonl)",
            secs(empty["inproc"]["files_out"]),
            secs(year["inproc"]["files_out"]),
        ],
        ["a job run's once-check (RunLog.has_run)", secs(empty["inproc"]["runs"]), secs(year["inproc"]["runs"])],
        [
            "web chat's message store read at start",
            secs(empty["inproc"]["transcript"]),
            secs(year["inproc"]["transcript"]),
        ],
        [
            "  its once-map (entries)",
            f"{empty['inproc']['transcript_map']:.0f}",
            f"{year['inproc']['transcript_map']:.0f}",
        ],
    ]
    print(table(["path", "empty workspace", f"{days} days of use"], rows))
    print()
    print(
        f"bot's resident memory per conversation answered ({conversations} conversations of "
        f"{1 if args.quick else 6} turns): {per_conversation:.1f} kB; histories held in memory after: {cached}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
