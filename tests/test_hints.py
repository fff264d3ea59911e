"""Hints name a command the user can run (issue 33.9): ``.venv/bin/assistant ...`` or a make target, as the
README does; a bare ``assistant ...`` is not on PATH after ``make run``."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

from messaging_llm_bot.cli.main import main

REPO = Path(__file__).resolve().parents[1]
#: ``assistant <command>`` not preceded by a path (``.venv/bin/assistant``) or part of a longer name.
BARE = re.compile(
    r"(?<![\w/.-])assistant (setup|doctor|config|memory|restore|backup|run|web|skills|collectors|trace|eval|%|\{)"
)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
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
            tree = ast.parse(path.read_text(encoding="utf-8"))
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
