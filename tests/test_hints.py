"""Hints name a command the user can run (issue 33.9): ``.venv/bin/assistant ...`` or a make target, as the
README does; a bare ``assistant ...`` is not on PATH after ``make run``. Where it is (the container image: /app
has no .venv, `assistant` is on PATH) hints name it bare, and elsewhere this install's full path
(assistant_framework/hints.py), through the real CLI (`assistant run --help`, whose examples are hints)."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from messaging_llm_bot.cli.main import main
from tests.statements import parse, statements

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / ".venv" / "bin"
#: ``assistant <command>`` not preceded by a path (``.venv/bin/assistant``) or part of a longer name.
BARE = re.compile(
    r"(?<![\w/.-])assistant (setup|doctor|config|memory|restore|backup|run|web|skills|collectors|trace|eval|%|\{)"
)

#: "assistant" followed by no letter, digit or underscore: every string BARE could match holds it in the source
#: (also when written in parts or with an escape), so a file without it needs no parse.
WORD = re.compile(r"assistant(?!\w)")


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    # A docstring opens a module's, a function's or a class's body; the last two are statements (tests/statements.py
    # walks the statements only, not the expressions: the one walk of every node is the constants' below).
    for node in [tree, *statements(tree)]:
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def test_no_message_in_the_code_names_a_bare_assistant_command() -> None:
    """Every string the code prints (docstrings aside, which speak of the command, not to the user)."""
    bare = []
    for root in ("messaging_llm_bot", "assistant_framework", "skills", "collectors"):
        for path in sorted((REPO / root).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if not WORD.search(text):  # no "assistant" as a word (imports say assistant_framework): no string to read
                continue
            tree = parse(text)
            skip = _docstrings(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                    if BARE.search(node.value):
                        bare.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value[:80]!r}")
    assert bare == [], "write these as `.venv/bin/assistant ...` or a make target:\n" + "\n".join(bare)


def test_doctor_on_a_fresh_clone_names_runnable_commands(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    config = tmp_path / "config"
    shutil.copytree(REPO / "config", config, ignore=shutil.ignore_patterns("local"))
    llm = json.loads((config / "llm.json").read_text())
    llm["runners"][0]["base_url"] = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    (config / "llm.json").write_text(json.dumps(llm))
    assert main(["doctor", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws")]) == 1
    out = capsys.readouterr().out
    commands = re.findall(r"`([^`]+)`", out)
    assert "`.venv/bin/assistant setup`" in out, out
    assert [c for c in commands if BARE.match(c)] == [], out


def examples(cwd: Path, path: str) -> str:
    env = {**os.environ, "PATH": path}
    shown = subprocess.run(
        [str(BIN / "assistant"), "run", "--help"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_in_the_checkout_hints_name_the_virtualenvs_command():
    out = examples(REPO, "/usr/bin:/bin")
    assert "\n  .venv/bin/assistant run --frontend console" in out and "first run: .venv/bin/assistant setup" in out


def test_where_assistant_is_on_path_hints_name_it_bare(tmp_path):
    out = examples(tmp_path, f"{BIN}:/usr/bin:/bin")  # as in the container: WORKDIR /app, assistant on PATH
    assert "\n  assistant run --frontend console" in out and "first run: assistant setup" in out
    assert ".venv/bin/assistant" not in out


def test_elsewhere_hints_name_the_full_path(tmp_path):
    out = examples(tmp_path, "/usr/bin:/bin")
    assert f"first run: {BIN / 'assistant'} setup" in out
