"""The first minutes at a terminal (issue 33.1, 33.5): with no model server the first prompt is no dead end
(what was tried is said and the setup offered, and run right there), and a workspace typo never creates a
workspace silently (``make chat WORKSPACE=<typo>``, ``assistant web --workspace <typo>``)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from tests import preload
from tests.cli_inprocess import run_cli
from tests.console_harness import REPO, Terminal, run_bot
from tests.fakes.chat_server import FakeChatServer

pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """The example config of a fresh clone, its runner pointed at a port where nothing listens
    (the example's Ollama on 11434, on a machine without Ollama)."""
    config = tmp_path / "config"
    shutil.copytree(REPO / "config", config, ignore=shutil.ignore_patterns("local"))
    llm = json.loads((config / "llm.json").read_text())
    llm["runners"][0]["base_url"] = f"http://127.0.0.1:{_closed_port()}/v1"
    (config / "llm.json").write_text(json.dumps(llm))
    return config


def _run(*args: str) -> Terminal:
    return Terminal([sys.executable, "-m", "messaging_llm_bot.cli", "run", *args], env={"TZ": "UTC"})


def test_no_model_server_says_what_was_tried_and_the_chat_still_starts(example: Path, tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    url = json.loads((example / "llm.json").read_text())["runners"][0]["base_url"]
    term = _run("--frontend", "console", "--config", str(example), "--workspace", str(ws.root))
    try:
        term.wait_for("Run the setup now? [Y/n] ")
        told = term.output
        assert "No model server answered" in told and f"runner 'local': cannot reach the model server at {url}" in told
        # The folders in use are named: `make setup` alone would set up config/, not this one.
        setup = f"make setup CONFIG={example} WORKSPACE={ws.root}"
        assert f"`{setup}` finds your model server" in told and f"writes it to {example / 'local'}/." in told
        term.type("n\r")
        term.wait_for(f"run `{setup}` when the model server is ready")
        term.wait_for("you> ")
        term.type("\x04")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert not (example / "local").exists()


def test_make_run_with_nothing_configured_runs_the_setup_then_answers_the_first_message(
    example: Path, tmp_path: Path
) -> None:
    ws = Workspace(tmp_path / "ws")
    with FakeChatServer() as chat:
        chat.set_handler(lambda request: '{"reply": "Hello! I am your assistant."}')
        term = _run("--config", str(example), "--workspace", str(ws.root))  # make run: no --frontend, no token
        try:
            term.wait_for("Run the setup now? [Y/n] ")
            term.type("\r")
            term.wait_for("Bot token: ")
            term.type("\r")  # no Telegram: the terminal chat
            term.wait_for("base URL")
            mark = len(term.output)
            term.type(chat.base_url + "\r")
            if term.wait_for_any(("API key (empty: none): ", "Use which model"), start=mark).startswith("API"):
                term.type("\r")
            term.wait_for("Use which model")
            term.type("\r")
            term.wait_for("Your time zone")
            term.type("\r")
            term.wait_for("Setup done; starting with the new settings.")
            term.wait_for("you> ", start=term.output.index("Setup done"))
            term.type("hello\r")
            answered = term.output.index("Setup done")
            term.wait_for("Hello! I am your assistant.", start=answered)
            term.wait_for("you> ", start=term.output.index("Hello! I am your assistant.", answered))
            term.type("\x04")
            assert term.proc.wait(30) == 0
        finally:
            term.close()
        url = chat.base_url
    assert json.loads((example / "local" / "llm.json").read_text())["runners"][0]["base_url"] == url


def test_a_workspace_typo_at_a_terminal_is_asked_about_and_nothing_is_created(example: Path, tmp_path: Path) -> None:
    typo = tmp_path / "wrokspace"
    term = _run("--frontend", "console", "--config", str(example), "--workspace", str(typo))
    try:
        term.wait_for("Create a new, empty workspace there? [y/N] ")
        assert f"There is no workspace at {typo}" in term.output
        term.type("\r")
        term.wait_for("Nothing was created.")
        assert term.proc.wait(30) == 2
    finally:
        term.close()
    assert not typo.exists()


def test_a_new_workspace_said_yes_to_is_created_and_said(example: Path, tmp_path: Path) -> None:
    new = tmp_path / "second"
    term = _run("--frontend", "console", "--config", str(example), "--workspace", str(new))
    try:
        term.wait_for("Create a new, empty workspace there? [y/N] ")
        term.type("y\r")
        term.wait_for(f"Created a new, empty workspace at {new}")
        term.wait_for("Run the setup now? [Y/n] ")
        term.type("n\r")
        term.wait_for("you> ")
        term.type("\x04")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert (new / "state").is_dir()


def test_a_scripted_start_on_a_new_workspace_says_it_created_one(tmp_path: Path) -> None:
    """Without a terminal (a service's first start) the bot creates the workspace, and says so."""
    from tests.console_harness import write_config

    (tmp_path / "skills").mkdir()
    config = write_config(tmp_path / "config", f"http://127.0.0.1:{_closed_port()}/v1", tmp_path / "skills")
    new = tmp_path / "data" / "ws"
    result = run_bot(["--frontend", "console", "--config", str(config), "--workspace", str(new)], "")
    assert result.returncode == 0, result.stderr
    assert f"Created a new, empty workspace at {new}" in result.stderr
    again = run_bot(["--frontend", "console", "--config", str(config), "--workspace", str(new)], "")
    assert again.returncode == 0 and "Created" not in again.stderr


def test_web_with_a_workspace_typo_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    typo = tmp_path / "wrokspace"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "messaging_llm_bot.cli", "web", "--workspace", str(typo), "--port", "0"]
    try:
        result = preload.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("assistant web served a new, empty workspace instead of refusing the typo")
    assert result.returncode == 2, result.stderr
    assert "not a workspace" in result.stderr and "Traceback" not in result.stderr
    assert not typo.exists()


def test_an_unset_api_key_env_is_said_as_unset_in_the_chat_and_by_doctor(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("ASSISTANT_TEST_UNSET_KEY", raising=False)
    from tests.console_harness import write_config

    (tmp_path / "skills").mkdir()
    with FakeChatServer(api_key="sk-needed") as chat:
        config = write_config(tmp_path / "config", chat.base_url, tmp_path / "skills")
        llm = json.loads((config / "llm.json").read_text())
        runner = {k: v for k, v in llm["runners"][0].items() if k != "api_key"}
        llm["runners"] = [{**runner, "api_key_env": "ASSISTANT_TEST_UNSET_KEY"}]
        (config / "llm.json").write_text(json.dumps(llm))
        ws = Workspace(tmp_path / "ws")
        chat_run = run_bot(["--frontend", "console", "--config", str(config), "--workspace", str(ws.root)], "hello\n")
        # In-process (the variable is unset here too, by monkeypatch): what doctor says is the point, not a process.
        doctor = run_cli("doctor", "--quick", "--config", str(config), "--workspace", str(ws.root), cwd=REPO)
    assert "ASSISTANT_TEST_UNSET_KEY (the runner's api_key_env) is not set" in chat_run.stdout, chat_run.stdout
    assert doctor.returncode == 1
    assert "the variable ASSISTANT_TEST_UNSET_KEY (its api_key_env) is not set" in doctor.stdout, doctor.stdout
