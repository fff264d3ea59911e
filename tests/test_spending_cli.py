"""``assistant eval skills`` and ``assistant trace replay`` spend the same money as the bot: their calls count
against the runners' spending caps of the workspace they are given, and a capped runner refuses there too.

Through the CLI (``main``) against the fake chat server, whose reported usage is what is counted.
"""

from __future__ import annotations

import json
from pathlib import Path

from assistant_framework.spending import STATE_FILE
from assistant_framework.traces import TraceStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests.fakes.chat_server import FakeChatServer

CASE = {"cases": [{"id": "hi", "category": "no_skill", "message": "hello", "expect": {"skill": None}}]}
REFUSED = "Every model runner ('paid') has reached its spending cap, so nothing was sent"
#: What the fake server reports for each answer: past the cap of 100,000 after one call.
OVER = {"prompt_tokens": 99000, "completion_tokens": 2000}


def _config(tmp_path: Path, server: FakeChatServer) -> Path:
    config = tmp_path / "config"
    config.mkdir()
    runner = {"name": "paid", "base_url": server.base_url, "model": "fake-model", "limits": {"daily_tokens": 100000}}
    (config / "llm.json").write_text(json.dumps({"runners": [runner], "retries_per_runner": 0}))
    return config


def _spent(ws: Workspace) -> int:
    return ws.read_json(STATE_FILE)["runners"]["paid"]["day_tokens"]


def test_eval_skills_counts_against_the_workspaces_caps_and_a_capped_runner_refuses(tmp_path: Path, capsys) -> None:
    ws = Workspace(tmp_path / "ws")
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "c.json").write_text(json.dumps(CASE))
    with FakeChatServer() as server:
        argv = ["eval", "skills", "--no-builtin", "--cases", str(cases), "--workspace", str(ws.root)]
        argv += ["--config", str(_config(tmp_path, server))]
        server.set_handler(lambda request: {"content": '{"reply": "Hello!"}', "usage": OVER})
        assert main(argv) == 0
        assert _spent(ws) == 101000 and len(server.chat_requests) == 1  # counted in the bot's ledger
        capsys.readouterr()
        assert main(argv) == 1  # the runner is at its cap: the same sentence as a turn gets, nothing sent
        assert REFUSED in capsys.readouterr().err
        assert len(server.chat_requests) == 1


def test_eval_skills_without_the_workspace_of_a_capped_runner_is_a_usage_error(tmp_path: Path, capsys) -> None:
    with FakeChatServer() as server:
        argv = ["eval", "skills", "--workspace", str(tmp_path / "nowhere"), "--config", str(_config(tmp_path, server))]
        assert main(argv) == 2
        assert server.chat_requests == []
    assert "not a workspace" in capsys.readouterr().err


def test_trace_replay_counts_against_the_caps_and_a_capped_runner_refuses(tmp_path: Path, capsys) -> None:
    ws = Workspace(tmp_path / "ws")
    request = {"model": "fake-model", "messages": [{"role": "user", "content": "hello"}], "parsed": {"reply": "hi"}}
    TraceStore(ws).write(
        {"id": "20260101T000000000000-aaaaaa", "time": "2026-01-01T00:00:00+00:00", "conversation": "c", "ok": True}
        | {"requests": [request], "reply": "hi"}
    )
    with FakeChatServer() as server:
        argv = ["trace", "replay", "--workspace", str(ws.root), "--config", str(_config(tmp_path, server))]
        server.set_handler(lambda request: {"content": '{"reply": "hi"}', "usage": OVER})
        assert main(argv) == 0
        assert _spent(ws) == 101000 and len(server.chat_requests) == 1
        capsys.readouterr()
        assert main(argv) == 1
        assert REFUSED in capsys.readouterr().err
        assert len(server.chat_requests) == 1
