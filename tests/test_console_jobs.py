"""Scheduled jobs in the terminal chat, through the real chat on a pseudo-terminal (``python -m
messaging_llm_bot --frontend console``): a job made there runs while the chat is open and its reply is
printed above the prompt, never into a line being typed; a run is made and printed once, also when the
chat is left before the reply could be printed and after a crash; a scripted (piped) chat runs no jobs.

The jobs are due at once when the test writes them (created an interval and ten seconds ago, as in
tests/test_jobs_signal.py), and the chat looks at them every 0.1 s (``jobs.poll_seconds``)."""

from __future__ import annotations

import json
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.inbox.ledger import read_ledger
from assistant_framework.jobs import JOBS_FILE, RUNS_FILE
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.job_runs import JobRun
from tests.console_harness import Terminal, run_bot, write_config

pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")

PROMPT = "you> "


def due_now(job_id: str, **row: object) -> dict:
    """A job of the terminal chat whose run is due at the first look."""
    created = (datetime.now(timezone.utc) - timedelta(minutes=60, seconds=10)).isoformat(timespec="seconds")
    return {
        "id": job_id,
        "name": f"job {job_id}",
        "every_minutes": 60,
        "created_at": created,
        "chat_id": "console",
        **row,
    }


def chat_config(tmp_path: Path, chat_server, test_skills_dir: Path) -> Path:
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "jobs.json").write_text(json.dumps({"poll_seconds": 0.1}))
    return config


def open_chat(config: Path, ws: Workspace) -> Terminal:
    argv = [sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config)]
    return Terminal([*argv, "--workspace", str(ws.root)])


def pending_files(ws: Workspace) -> list[dict]:
    """The inbox's pending items as stored (read as files: a second Inbox would write seen.log); an item the
    running chat completes between the listing and the read is not pending any more."""
    found = []
    for path in sorted((ws.root / "state/inbox/pending").glob("*/*.json")):
        try:
            found.append(json.loads(path.read_text()))
        except FileNotFoundError:
            continue
    return found


def recorded_replies(ws: Workspace) -> list[str]:
    """The replies recorded in the pending items' ledgers (read as a restart reads them)."""
    replies = []
    for item in pending_files(ws):
        probe = InboxItem(item["item_id"], item["source_id"], item["conversation_id"], item["seq"], {}, "")
        read_ledger(ws, probe)
        replies.append(str(probe.reply))
    return replies


def start_until_done(config: Path, ws: Workspace, text: str) -> Terminal:
    """The chat started, ``text`` printed, the inbox emptied, the chat left with Ctrl-D (status 0)."""
    term = open_chat(config, ws)
    try:
        term.wait_for(text)
        wait_until(lambda: not pending_files(ws), term, "the runs completed")
        term.type("\x04")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    return term


def wait_until(predicate, term: Terminal, what: str, timeout: float = 30) -> None:
    """Wait for ``predicate`` while reading the terminal (its output must not fill the pty)."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen; output so far:\n{term.output[-3000:]}")
        term._read(0.1)


def test_a_job_runs_while_the_chat_is_open_and_prints_between_prompts(tmp_path, chat_server, test_skills_dir):
    config = chat_config(tmp_path, chat_server, test_skills_dir)
    ws = Workspace(tmp_path / "ws")
    asked: list[str] = []

    def model(request: dict) -> str:
        asked.append(request["messages"][-1]["content"])
        return '{"reply": "No open tasks."}' if "Which tasks are open?" in asked[-1] else '{"reply": "ok!"}'

    chat_server.set_handler(model)
    term = open_chat(config, ws)
    try:
        term.wait_for(PROMPT)
        ws.write_json(JOBS_FILE, [due_now("j1", message="Stretch")])
        term.wait_for("🗓 Stretch")  # at an empty prompt: at once
        term.wait_for(PROMPT, start=term.output.index("🗓 Stretch"))  # and the prompt again below it
        term.type("hel")  # a line being typed, not sent
        mark = len(term.output)
        ws.write_json(JOBS_FILE, [*ws.read_json(JOBS_FILE), due_now("j2", prompt="Which tasks are open?")])
        term.wait_for("No open tasks.", start=mark)  # above the line being typed, which stays whole below it
        term.wait_for(f"{PROMPT}hel", start=term.output.index("No open tasks.", mark))
        shown = term.lines_shown()
        assert shown[-1] == f"{PROMPT}hel" and "No open tasks." in shown, shown
        assert [line for line in shown if "hel" in line and "/help" not in line] == [f"{PROMPT}hel"], shown
        term.type("lo\r")
        term.wait_for("ok!", start=term.output.index("No open tasks.", mark))
        term.wait_for(PROMPT, start=term.output.index("ok!", mark))
        term.type("\x04")  # Ctrl-D
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert term.output.count("🗓 Stretch") == 1 and term.output.count("No open tasks.") == 1
    # The reply printed as one block: the line being typed drawn once below it, then once as sent ("you> hello");
    # printed in two writes, the prompt was erased and drawn again between them (a screen read then lacked it).
    assert term.output.count(f"{PROMPT}hel", term.output.index("No open tasks.")) == 2, term.output[-3000:]
    assert sum(a.startswith("hello") for a in asked) == 1 and sum("Which tasks are open?" in a for a in asked) == 1
    runs = ws.read_jsonl(RUNS_FILE)
    assert sorted((r["job"], r["outcome"]) for r in runs) == [("j1", "delivered"), ("j2", "delivered")]
    assert pending_files(ws) == []


def test_a_reply_made_as_the_chat_is_left_is_printed_once_at_the_next_start(tmp_path, chat_server, test_skills_dir):
    """The run's reply comes once the chat is leaving (Ctrl-D; the run is given a moment to end): it is recorded and
    not printed, and stays in the inbox."""
    config = chat_config(tmp_path, chat_server, test_skills_dir)
    ws = Workspace(tmp_path / "ws")
    go = threading.Event()
    chat_server.set_handler(lambda request: (go.wait(30), '{"reply": "Two tasks are open."}')[1])
    term = open_chat(config, ws)
    log = ws.root / "state" / "logs" / "console.log"
    try:
        term.wait_for(PROMPT)
        ws.write_json(JOBS_FILE, [due_now("j1", prompt="Which tasks are open?")])
        wait_until(lambda: chat_server.chat_requests, term, "the run asking the model")
        term.type("\x04")  # Ctrl-D: the chat leaves, the run still making its reply
        wait_until(lambda: "stopping; waiting up to" in log.read_text(), term, "the chat leaving")
        go.set()
        assert term.proc.wait(30) == 0
    finally:
        go.set()
        term.close()
    assert any("Two tasks" in r for r in recorded_replies(ws))
    assert "Two tasks are open." not in term.output
    assert ws.read_jsonl(RUNS_FILE) == [] and len(pending_files(ws)) == 1  # not lost: still in the inbox
    again = start_until_done(config, ws, "Two tasks are open.")
    assert again.output.count("Two tasks are open.") == 1
    assert len(chat_server.chat_requests) == 1  # made once, before the chat was left
    assert [(r["job"], r["outcome"]) for r in ws.read_jsonl(RUNS_FILE)] == [("j1", "delivered")]


def test_a_run_left_by_a_crash_is_printed_once_at_the_next_start(tmp_path, chat_server, test_skills_dir):
    config = chat_config(tmp_path, chat_server, test_skills_dir)
    ws = Workspace(tmp_path / "ws")
    planned = "2026-03-01T07:30:00+00:00"
    inbox = Inbox(ws)
    for job_id, printed in (("j1", False), ("j2", True)):  # cut off before it was printed, and after
        run = JobRun(f"job:{job_id}:{planned}", job_id, f"job {job_id}", "prompt", "Sum up", planned, False, "UTC")
        item = inbox.accept(run.run_id, "console", run.payload())
        assert item is not None
        inbox.record_reply(item.item_id, f"Summary of {job_id}")
        if printed:
            inbox.record_part(item.item_id, 0, 1)
    del inbox
    term = start_until_done(config, ws, "Summary of j1")
    assert term.output.count("Summary of j1") == 1 and "Summary of j2" not in term.output
    assert chat_server.chat_requests == []  # the replies were made before: not asked again
    assert sorted(r["job"] for r in ws.read_jsonl(RUNS_FILE)) == ["j1", "j2"]


def test_a_scripted_chat_runs_no_jobs_and_prints_only_reply_blocks(tmp_path, chat_server, test_skills_dir):
    config = chat_config(tmp_path, chat_server, test_skills_dir)
    ws = Workspace(tmp_path / "ws")
    ws.write_json(JOBS_FILE, [due_now("j1", message="Stretch")])
    chat_server.set_handler(lambda request: '{"reply": "ok!"}')
    done = run_bot(["--frontend", "console", "--config", str(config), "--workspace", str(ws.root)], "hello\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok!\n\n"
    assert ws.read_jsonl(RUNS_FILE) == [] and pending_files(ws) == []
