"""Leaving the terminal chat is instant: /quit does not wait for a fact extraction under way, and the
exchange is extracted at the next start (the extraction queue's journal, memory/journal.py)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from assistant_framework.memory.extract import EXTRACTION_PROMPT
from assistant_framework.memory.journal import JOURNAL_PATH
from assistant_framework.stores.facts import FactStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.run import LEFT_FOR_NEXT_START
from tests.console_harness import Terminal, write_config
from tests.fakes.chat_server import FakeChatServer
from tests.waiting import wait_until

pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")

FACT = {"subject": "user", "attribute": "favourite drink", "value": "green tea"}


def _console(config: Path, ws: Path) -> Terminal:
    argv = [sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config)]
    return Terminal([*argv, "--workspace", str(ws)])


# /quit with the shipped shutdown bound (20 s: leaving waits CONSOLE_EXIT_SECONDS, 1 s); Ctrl-D with a bound of
# 0.3 s, the smaller of the two, so the extraction held past it is waited 0.3 s (the same leaving, a shorter wait).
@pytest.mark.parametrize("leave, bound", [("/quit\r", None), ("\x04", 0.3)], ids=["quit", "ctrl-d"])
def test_quit_during_an_extraction_returns_at_once_and_the_next_start_extracts_it(
    tmp_path: Path, chat_server: FakeChatServer, test_skills_dir: Path, leave: str, bound: float | None
) -> None:
    runtime = {} if bound is None else {"shutdown_timeout_seconds": bound}
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir, **runtime)
    (config / "memory.json").write_text(json.dumps({"enabled": True, "extract_idle_seconds": 0}))
    ws = Workspace(tmp_path / "ws")
    extracting, release = threading.Event(), threading.Event()
    model_answers_extractions = False

    def handler(request: dict) -> str:
        if request["messages"][0]["content"] == EXTRACTION_PROMPT:
            extracting.set()
            if not model_answers_extractions:
                release.wait(60)  # a slow local model: the extraction is still running at /quit
            return json.dumps({"facts": [FACT]})
        return '{"reply": "Lovely!"}'

    chat_server.set_handler(handler)
    term = _console(config, ws.root)
    try:
        term.wait_for("you> ")
        term.type("I always drink green tea in the morning\r")
        term.wait_for("Lovely!")
        assert extracting.wait(30), "no extraction was started"
        term.wait_for("you> ", start=term.output.index("Lovely!"))  # reading again: Ctrl-D is an end of input
        mark = len(term.output)
        term.type(leave)
        term.wait_for(LEFT_FOR_NEXT_START, timeout=10, start=mark)  # generous for 1 s, shorter than the old 20 s
        assert term.proc.wait(10) == 0  # gone without waiting for the model
    finally:
        term.close()
        release.set()
    assert FactStore(ws).all() == []
    assert "green tea" in ws.read_text(JOURNAL_PATH)  # kept for the next start

    model_answers_extractions = True
    if bound is not None:  # the next start's leaving, with nothing held, has the shipped bound (a loaded machine)
        write_config(config, chat_server.base_url, test_skills_dir)
        (config / "memory.json").write_text(json.dumps({"enabled": True, "extract_idle_seconds": 0}))
    term = _console(config, ws.root)
    try:
        term.wait_for("you> ")
        wait_until(lambda: FactStore(ws).all(), timeout=30, what="the fact extracted at the start")
        facts = FactStore(ws).all()
        assert [(f["attribute"], f["value"], f["source"]) for f in facts] == [
            ("favourite drink", "green tea", "extraction")
        ]
        term.type("/quit\r")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert not ws.exists(JOURNAL_PATH)  # stored: not extracted a third time
    assert LEFT_FOR_NEXT_START not in term.output  # nothing was left this time
