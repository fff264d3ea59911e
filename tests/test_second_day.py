"""A user's second day, through the real processes: memory files edited by hand, a reminder due while the bot was
down, /stats after a stopped answer, Ctrl-C in the terminal chat, and ``assistant setup`` run again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from tests.console_harness import Terminal, write_config

pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")


def _chat(config: Path, workspace: Path) -> Terminal:
    """The terminal chat on a pty, on an existing workspace (a new one would be asked about)."""
    root = Workspace(workspace).root
    argv = [sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config)]
    return Terminal([*argv, "--workspace", str(root)])


def test_ctrl_c_while_the_model_thinks_leaves_no_prompt_behind_and_stats_name_the_model(
    tmp_path: Path, chat_server, test_skills_dir
) -> None:
    """Ctrl-C before the answer's first word: the screen showed an empty ``you>`` line above "… stopping", and
    /stats then listed the stopped call under the model "unknown" (not the configured one's)."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    llm = json.loads((config / "llm.json").read_text())
    (config / "llm.json").write_text(json.dumps({**llm, "stream": True}))  # as the shipped config/llm.json
    chat_server.enqueue({"content": '{"reply": "never finished"}', "delay": 8}, '{"reply": "here again"}')
    term = _chat(config, tmp_path / "ws")
    try:
        term.wait_for("you> ")
        term.type("tell me a long story\r")
        assert chat_server.wait_for_requests(1, timeout=30, path="/chat/completions")
        term.wait_for("thinking")
        term.type("\x03")  # Ctrl-C
        term.wait_for("⏹ Stopped.")
        mark = term.output.index("⏹ Stopped.")
        term.wait_for("you> ", start=mark)
        term.type("hello\r")
        term.wait_for("here again", start=mark)
        mark = term.output.index("here again", mark)
        term.wait_for("you> ", start=mark)
        term.type("/stats\r")
        term.wait_for("Per day:", start=mark)
        term.wait_for("you> ", start=term.output.index("Per day:", mark))
        shown = term.lines_shown()
    finally:
        term.close()
    stopping = next(i for i, line in enumerate(shown) if line.startswith("… stopping"))
    # What the screen shows from the message to the stop: no empty prompt left between them.
    asked = max(i for i, line in enumerate(shown[:stopping]) if line.startswith("you> tell me"))
    assert [line for line in shown[asked + 1 : stopping] if line.strip() in ("you>", "")] == [], "\n".join(shown)
    stats = shown[shown.index("you> /stats") :]
    assert not any("unknown" in line for line in stats), stats
    assert any(line.startswith("- fake-model: 2 msgs") for line in stats), stats
