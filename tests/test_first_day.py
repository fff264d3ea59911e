"""A new user's first day, through the real processes: what trips someone who follows the README."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import requests

from assistant_framework.traces import TraceStore, new_trace_id
from assistant_framework.workspace import Workspace
from tests.cli_inprocess import run_cli
from tests.console_harness import Terminal, run_bot, write_config
from tests.setup_runs import example_config
from tests.web_site import WEB_TOKEN, start_site


def test_what_a_skill_saved_is_recalled_in_a_new_conversation_at_once(tmp_path, chat_server, test_skills_dir):
    """Remember something, /new, ask for it back: the note the skill wrote is recalled in the next turn, not only
    after the memory index's periodic refresh (a minute without background work, never during a busy chat)."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "memory.json").write_text(json.dumps({"enabled": True, "extract_facts": False}))
    workspace = tmp_path / "ws"
    chat_server.enqueue(
        '{"skill": "save_note", "args": {"name": "anna", "text": "Anna birthday fourteenth of March"}}',
        '{"reply": "Saved."}',
        '{"reply": "On the fourteenth of March."}',
    )
    stdin = "remember: Anna birthday fourteenth of March\n/new\nwhen is Anna birthday?\n"
    proc = run_bot(["--frontend", "console", "--config", str(config), "--workspace", str(workspace)], stdin)
    assert proc.returncode == 0, proc.stderr
    assert "On the fourteenth of March." in proc.stdout
    asked = chat_server.chat_requests[-1]["messages"][-1]["content"]
    assert "when is Anna birthday?" in asked
    assert "[Recalled memory" in asked
    recalled = asked.split("[Recalled memory", 1)[1]
    assert "(notes, " in recalled and "fourteenth of March" in recalled


def test_a_fact_forgotten_is_no_longer_recalled_in_the_next_conversation(tmp_path, chat_server, test_skills_dir):
    """The neighbour of the case above: a fact added, recalled in a new conversation; forgotten, it was still
    recalled in the next one until the index's refresh (the skill says "removed from facts/facts.json")."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "memory.json").write_text(json.dumps({"enabled": True, "extract_facts": False}))
    (config / "policy.json").write_text(json.dumps({"capabilities": {"delete": "allow"}}))
    add = {"action": "add", "subject": "Anna", "attribute": "birthday", "value": "fourteenth of March"}
    chat_server.enqueue(
        json.dumps({"skill": "facts", "args": add}),
        '{"reply": "Saved."}',
        json.dumps({"skill": "facts", "args": {"action": "forget", "id": "f1"}}),
        '{"reply": "Forgotten."}',
        '{"reply": "I do not know."}',
    )
    typed = "remember Anna birthday\n/new\nforget Anna birthday f1\n/new\nwhen is Anna birthday?\n"
    args = ["--frontend", "console", "--config", str(config), "--workspace", str(tmp_path / "ws")]
    proc = run_bot(args, typed)
    assert proc.returncode == 0, proc.stderr
    assert "Forgotten." in proc.stdout and "I do not know." in proc.stdout, proc.stdout
    forget, asked = (r["messages"][-1]["content"] for r in chat_server.chat_requests[2:5:2])
    assert "fourteenth of March" in forget.split("[Recalled memory", 1)[-1]  # recalled while it was there
    assert "fourteenth of March" not in asked, asked


def test_the_first_start_in_a_fresh_clone_makes_the_workspace_private_without_a_warning(
    tmp_path, chat_server, test_skills_dir
):
    """A clone's ``workspace/`` holds its tracked README (0755 and 0644 under the usual umask): the first start
    makes both private, and says that it created the workspace, not that other users could read its files
    (a timestamped WARNING was the first line a new user saw). A workspace used before is still warned about."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    workspace = tmp_path / "workspace"
    workspace.mkdir(mode=0o755)
    (workspace / "README.md").write_text("# workspace/\n")
    os.chmod(workspace, 0o755)
    os.chmod(workspace / "README.md", 0o644)
    args = ["--frontend", "console", "--config", str(config), "--workspace", str(workspace)]
    proc = run_bot(args, "")
    assert proc.returncode == 0, proc.stderr
    assert f"Created a new, empty workspace at {workspace}" in proc.stderr
    assert "files and folders private" not in proc.stderr and "WARNING" not in proc.stderr, proc.stderr
    assert stat.S_IMODE(workspace.stat().st_mode) == 0o700
    assert stat.S_IMODE((workspace / "README.md").stat().st_mode) == 0o600
    os.chmod(workspace / "README.md", 0o644)  # loosened after it was in use: that is said
    again = run_bot(args, "")
    assert again.returncode == 0, again.stderr
    assert f"workspace {workspace}: made 1 files and folders private" in again.stderr
    assert stat.S_IMODE((workspace / "README.md").stat().st_mode) == 0o600


def test_setup_first_then_the_bot_make_the_clones_workspace_private_without_a_warning(tmp_path, chat_server):
    """``make setup`` before the first ``make run`` (the README's order for a Telegram user): setup creates the
    workspace private, so the bot's first start has nothing to warn about."""
    config = example_config(tmp_path)
    workspace = tmp_path / "workspace"
    workspace.mkdir(mode=0o755)
    (workspace / "README.md").write_text("# workspace/\n")
    os.chmod(workspace, 0o755)
    os.chmod(workspace / "README.md", 0o644)
    flags = ("--no-telegram", "--no-test", "--base-url", chat_server.base_url, "--timezone", "UTC")
    setup = run_cli("setup", "--yes", "--config", str(config), "--workspace", str(workspace), *flags)
    assert setup.returncode == 0, setup.stderr
    assert "files and folders private" not in setup.stdout + setup.stderr
    assert f"Workspace: {workspace} (created now, empty)\n" in setup.stdout  # said as the bot says it
    assert stat.S_IMODE((workspace / "README.md").stat().st_mode) == 0o600
    assert stat.S_IMODE(workspace.stat().st_mode) == 0o700
    proc = run_bot(["--frontend", "console", "--config", str(config), "--workspace", str(workspace)], "")
    assert proc.returncode == 0, proc.stderr
    assert "files and folders private" not in proc.stderr and "WARNING" not in proc.stderr, proc.stderr
    again = run_cli("setup", "--yes", "--config", str(config), "--workspace", str(workspace), *flags)
    assert again.returncode == 0 and f"Workspace: {workspace}\n" in again.stdout, again.stdout


def test_a_failed_skill_is_said_once_in_the_terminal_chat(tmp_path, chat_server, test_skills_dir):
    """At a terminal the progress line of a skill that failed named it twice ("… skill birthdays failed: skill
    'birthdays' failed: ValueError: ..."), seen at once with a small model that leaves an argument out."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    chat_server.enqueue('{"skill": "boom", "args": {}}', '{"reply": "It did not work."}')
    _, screen = at_a_terminal(config, tmp_path / "ws", "go", "It did not work.", "--frontend", "console")
    # The screen, not the raw output: the line editor redraws only what changed of a line.
    assert "… skill boom failed: RuntimeError: kaput" in screen, screen
    assert not [line for line in screen if "failed: skill" in line], screen


def test_make_run_without_a_token_at_a_terminal_says_once_that_this_is_the_terminal_chat(
    tmp_path, chat_server, test_skills_dir
):
    """``make run`` at a terminal with no Telegram token (also right after a setup that skipped Telegram): it said
    "To chat in this terminal instead: `make chat`. Starting the terminal chat instead." (start what is starting)."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    shown, _ = at_a_terminal(config, tmp_path / "ws")  # no --frontend: as make run
    assert "No Telegram bot token is configured, so this is the terminal chat" in shown
    assert "`make setup` adds Telegram" in shown
    assert "instead" not in shown


def at_a_terminal(config: Path, workspace: Path, typed: str = "", until: str = "", *args: str) -> tuple[str, list[str]]:
    """The bot on a pseudo-terminal with ``args``: at its prompt ``typed`` is sent and ``until`` awaited, then
    Ctrl-D; what it printed (escapes taken out) and the lines its screen showed at the end."""
    argv = [sys.executable, "-m", "messaging_llm_bot", *args, "--config", str(config)]
    term = Terminal([*argv, "--workspace", str(Workspace(workspace).root)])
    try:
        term.wait_for("you> ")
        if typed:
            term.type(typed + "\r")
            term.wait_for(until)
        term.type("\x04")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    return term.output, term.lines_shown()


def test_a_copied_example_reply_after_skills_says_what_the_skills_did(tmp_path, chat_server, test_skills_dir):
    """SmolLM2-135M (the real model of docs/benchmarks.md) answered {"reply": "..."} after every skill call: it
    copies the example of the message that brings the skill's result, and the user read "..." as the answer;
    without a skill call it answered "<text for the user>" from the instructions. Such a reply says so and what
    each skill did; a real answer is kept as it is."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    chat_server.enqueue(
        '{"skill": "save_note", "args": {"name": "anna", "text": "Anna: 14 March"}}',
        '{"reply": "..."}',
        '{"skill": "boom", "args": {}}',
        '{"reply": "..."}',
        '{"skill": "add", "args": {"a": 2, "b": 3}}',
        '{"reply": "It is 5."}',
        '{"reply": "<text for the user>"}',
        '{"skill": "reminders", "args": {"action": "add", "in_minutes": 1}}',
        '{"reply": "..."}',
    )
    args = ["--frontend", "console", "--config", str(config), "--workspace", str(tmp_path / "ws")]
    typed = "remember Anna: 14 March\nbreak it\nadd 2 and 3\nSet a reminder in 1 minute\nremind me in 1 minute\n"
    proc = run_bot(args, typed)
    assert proc.returncode == 0, proc.stderr
    replies = [block for block in proc.stdout.split("\n\n") if block.strip()]
    assert replies == [
        'The model wrote no answer of its own (only "..."). What it did: save_note saved to notes/anna.md.',
        'The model wrote no answer of its own (only "..."). What it did: boom failed: RuntimeError: kaput.',
        "It is 5.",
        'The model wrote no answer of its own (only "<text for the user>").',
        # A skill's ValueError is its sentence about the arguments: no Python class name for the user.
        "The model wrote no answer of its own (only \"...\"). What it did: reminders failed: action 'add' needs text.",
    ], proc.stdout


def test_a_time_zone_typo_gets_the_zone_meant(tmp_path, chat_server):
    """ "Europe/Berln" typed at setup's question (or given as a flag, or set in the config) was refused with
    examples only; like a config key's typo it now names the zone meant. Nothing is written."""
    config = example_config(tmp_path)
    workspace = tmp_path / "ws"
    flags = ("--no-telegram", "--no-test", "--base-url", chat_server.base_url, "--timezone", "Europe/Berln")
    setup = run_cli("setup", "--yes", "--config", str(config), "--workspace", str(workspace), *flags)
    assert setup.returncode == 2
    assert "unknown IANA time zone 'Europe/Berln' (did you mean 'Europe/Berlin'?)" in setup.stderr, setup.stderr
    assert not (config / "local").exists() and not workspace.exists()
    set_it = run_cli("config", "set", "runtime.timezone", "Europe/Berln", "--config", str(config))
    assert set_it.returncode == 2 and "(did you mean 'Europe/Berlin'?)" in set_it.stderr, set_it.stderr
    far = run_cli("config", "set", "runtime.timezone", "Mars/Olympus", "--config", str(config))
    assert far.returncode == 2 and "(e.g. Europe/Berlin, America/New_York, UTC)" in far.stderr, far.stderr


def test_the_usage_page_says_how_many_requests_the_server_reported_no_usage_for(tmp_path):
    """The web page's Usage said "model requests 19, prompt tokens 4495" where llama.cpp's server had reported
    usage for 4 of the 19 (the streamed ones carry none): the sums were a quarter of the truth, unsaid."""
    site = start_site(tmp_path)
    try:
        no_usage = {"round": 1, "model": "test-model", "elapsed_s": 0.5, "usage": {}, "messages": []}
        TraceStore(site.workspace).write(
            {"id": new_trace_id(), "time": datetime.now(timezone.utc).isoformat(), "requests": [no_usage, no_usage]}
        )
        usage = requests.get(f"{site.base}/api/usage", headers={"Authorization": f"Bearer {WEB_TOKEN}"}).json()
        assert usage["total"]["requests"] == 3 and usage["total"]["unreported"] == 2
        page = requests.get(f"{site.base}/usage", headers={"Authorization": f"Bearer {WEB_TOKEN}"}).text
        assert "<dd>3 (2 the server reported no usage for: their tokens are not counted here)</dd>" in page
    finally:
        site.close()


def test_a_streamed_answer_longer_than_the_terminal_is_wide_goes_on_showing(tmp_path, chat_server, test_skills_dir):
    """The line an answer is writing is drawn with the prompt, which does not wrap: at 80 columns the answer stood
    still after "word12" until its line ended (a paragraph of a real model: most of the answer's time)."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    llm = json.loads((config / "llm.json").read_text())
    (config / "llm.json").write_text(json.dumps({**llm, "stream": True}))
    held = threading.Event()
    words = " ".join(f"word{i}" for i in range(60))
    chat_server.enqueue({"content": json.dumps({"reply": words}), "chunk_gate": lambda i: i == 40 and held.wait(30)})
    argv = [sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config)]
    term = Terminal([*argv, "--workspace", str(Workspace(tmp_path / "ws").root)])
    try:
        term.wait_for("you> ")
        term.type("go\r")
        # Held after 39 words: past the first row of 80 columns (13 words).
        term.wait_shown(lambda shown: any("word30" in line for line in shown), "the answer past its first row")
        assert not any("word59" in line for line in term.lines_shown())
        held.set()
        term.wait_shown(lambda shown: any(line.endswith("58 word59") for line in shown), "the whole answer")
        term.type("\x04")
        assert term.proc.wait(30) == 0
    finally:
        held.set()
        term.close()
    shown = "".join(line for line in term.lines_shown() if line.startswith(("word", " word")) or "word" in line)
    assert shown.count("word59") == 1, term.lines_shown()
