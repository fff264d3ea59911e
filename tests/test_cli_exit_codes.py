"""One exit-code rule for every command (0 all good, 1 ran and found failures, 2 usage or config
error), no traceback for a user error, and eval/replay check the model server before the first case."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from assistant_framework.traces import TraceStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests import preload
from tests.fakes.chat_server import FakeChatServer

REPO = Path(__file__).resolve().parents[1]
CASE = {"cases": [{"id": "hi", "category": "no_skill", "message": "hello", "expect": {"skill": None}}]}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(*argv: str) -> subprocess.CompletedProcess:
    return preload.run(
        [sys.executable, "-m", "messaging_llm_bot.cli", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _traces(workspace: Workspace, ids: list[str]) -> None:
    store = TraceStore(workspace)
    for trace_id in ids:
        request = {
            "model": "fake-model",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}],
            "parsed": {"reply": "hi"},
        }
        store.write(
            {
                "id": trace_id,
                "time": "2026-01-01T00:00:00+00:00",
                "conversation": "c",
                "ok": True,
                "requests": [request],
                "responses": [{"text": '{"reply": "hi"}'}],
                "reply": "hi",
            }
        )


def test_version_on_both_commands(capsys) -> None:
    from messaging_llm_bot.cli.run import main as bot_main

    for entry in (main, bot_main):
        with pytest.raises(SystemExit) as exited:
            entry(["--version"])
        assert exited.value.code == 0
        assert capsys.readouterr().out.split()[-1][0].isdigit()


def test_export_cases_to_a_missing_folder_exits_2(tmp_path: Path, capsys) -> None:
    ws = Workspace(tmp_path / "ws")
    _traces(ws, ["20260101T000000000000-aaaaaa"])
    assert (
        main(["trace", "export-cases", "--workspace", str(ws.root), "--out", str(tmp_path / "missing" / "file.yaml")])
        == 2
    )
    assert "does not exist" in capsys.readouterr().err


def test_compare_with_a_missing_or_broken_report_exits_2(tmp_path: Path, capsys) -> None:
    (tmp_path / "b.json").write_text("{}")
    assert main(["eval", "skills", "--compare", str(tmp_path / "missing.json"), str(tmp_path / "b.json")]) == 2
    assert "cannot read report" in capsys.readouterr().err
    (tmp_path / "a.json").write_text("not json")
    assert main(["eval", "skills", "--compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    assert "not a JSON report" in capsys.readouterr().err


def test_eval_with_the_server_down_stops_before_the_first_case(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "llm.json").write_text(
        json.dumps({"runners": [{"name": "configured", "base_url": "http://127.0.0.1:1/v1", "model": "m"}]})
    )
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    assert main(["eval", "skills", "--config", str(config), "--base-url", url, "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert f"cannot reach the model server at {url}" in err
    assert "'--base-url'" in err and "configured" not in err  # names what was called, not the replaced runner
    assert "[  1/" not in err  # no case ran


def test_eval_with_a_model_the_server_does_not_list(tmp_path: Path, capsys) -> None:
    with FakeChatServer(models=("qwen3:8b",)) as server:
        assert (
            main(
                [
                    "eval",
                    "skills",
                    "--base-url",
                    server.base_url,
                    "--model",
                    "qwen3:80b",
                    "--config",
                    str(tmp_path / "none"),
                ]
            )
            == 2
        )
        assert server.chat_requests == []
    assert "does not list the model 'qwen3:80b' (it offers: qwen3:8b)" in capsys.readouterr().err


def test_eval_exits_1_when_a_case_fails_and_0_when_all_pass(tmp_path: Path, capsys) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "c.json").write_text(json.dumps(CASE))
    with FakeChatServer() as server:
        argv = [
            "eval",
            "skills",
            "--base-url",
            server.base_url,
            "--model",
            "fake-model",
            "--cases",
            str(cases),
            "--no-builtin",
            "--config",
            str(tmp_path / "none"),
        ]
        server.set_handler(lambda request: '{"reply": "Hello!"}')
        assert main(argv) == 0
        server.set_handler(lambda request: '{"skill": "tasks", "args": {"action": "list"}}')
        assert main(argv) == 1
    assert "1 of 1 case(s) failed" in capsys.readouterr().err


def test_replay_checks_the_server_first_and_exits_1_when_every_replay_errs(tmp_path: Path, capsys) -> None:
    ws = Workspace(tmp_path / "ws")
    config = tmp_path / "config"
    config.mkdir()
    with FakeChatServer() as server:
        (config / "llm.json").write_text(
            json.dumps(
                {
                    "runners": [{"name": "fake", "base_url": server.base_url, "model": "fake-model"}],
                    "retries_per_runner": 0,
                }
            )
        )
        _traces(ws, ["20260101T000000000000-aaaaaa", "20260101T000001000000-aaaaab"])
        server.set_handler(lambda request: {"status": 500, "body": {"error": {"message": "boom"}}})
        assert main(["trace", "replay", "--last", "2", "--workspace", str(ws.root), "--config", str(config)]) == 1
        assert "2 error" in capsys.readouterr().out
    assert main(["trace", "replay", "--last", "2", "--workspace", str(ws.root), "--config", str(config)]) == 2
    assert "cannot reach the model server" in capsys.readouterr().err


def test_ambiguous_trace_prefix_lists_the_matches_and_exits_2(tmp_path: Path, capsys) -> None:
    ws = Workspace(tmp_path / "ws")
    _traces(ws, ["20260101T000000000000-aaaaaa", "20260101T000001000000-aaaaab"])
    assert main(["trace", "show", "20260101T00000", "--workspace", str(ws.root)]) == 2
    err = capsys.readouterr().err
    assert (
        "2 trace ids start with" in err
        and "20260101T000000000000-aaaaaa" in err
        and "20260101T000001000000-aaaaab" in err
    )
    assert main(["trace", "show", "20260101T000001", "--workspace", str(ws.root)]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "20260101T000001000000-aaaaab"
    assert main(["trace", "list", "--json", "--workspace", str(ws.root)]) == 0
    assert [row["id"] for row in json.loads(capsys.readouterr().out)] == [
        "20260101T000001000000-aaaaab",
        "20260101T000000000000-aaaaaa",
    ]


def test_collectors_list_exits_1_on_a_load_error(tmp_path: Path, capsys) -> None:
    plugins = tmp_path / "plugins" / "broken"
    plugins.mkdir(parents=True)
    (plugins / "__init__.py").write_text("raise RuntimeError('cannot import me')\n")
    (plugins / "README.md").write_text("# broken\n")
    config = tmp_path / "config"
    config.mkdir()
    (config / "runtime.json").write_text(json.dumps({"collectors_dirs": [str(tmp_path / "plugins")]}))
    Workspace(tmp_path / "ws")
    argv = ["collectors", "list", "--config", str(config), "--workspace", str(tmp_path / "ws")]
    assert main(argv) == 1
    capsys.readouterr()
    assert main([*argv, "--json"]) == 1
    listed = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in listed["errors"]] == ["broken"] and "cannot import me" in listed["errors"][0]["error"]
    assert main(["collectors", "status", "--json", "--config", str(config), "--workspace", str(tmp_path / "ws")]) == 0
    assert isinstance(json.loads(capsys.readouterr().out), list)


def test_memory_stats_json(tmp_path: Path, capsys) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.write_text("notes/a.md", "# A\nhello there\n")
    config = tmp_path / "config"
    config.mkdir()
    assert main(["memory", "stats", "--json", "--workspace", str(ws.root), "--config", str(config)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["files"] >= 1 and stats["entries"] >= 1


def test_a_file_given_as_workspace_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a folder")
    result = _run("memory", "stats", "--workspace", str(tmp_path / "notes.txt"), "--config", str(tmp_path))
    assert result.returncode == 2 and "not a workspace" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_eval_takes_a_cases_file_as_well_as_a_folder(tmp_path: Path, capsys) -> None:
    """`trace export-cases --out mine.yaml` writes a file; `--cases mine.yaml` said 'folder ... does not exist'."""
    (tmp_path / "mine.yaml").write_text(
        "cases:\n  - id: hi\n    category: no_skill\n    message: hello\n    expect: {skill: null}\n"
    )
    (tmp_path / "empty.yaml").write_text("")
    with FakeChatServer() as server:
        server.set_handler(lambda request: '{"reply": "Hello!"}')
        argv = [
            "eval",
            "skills",
            "--base-url",
            server.base_url,
            "--model",
            "fake-model",
            "--no-builtin",
            "--config",
            str(tmp_path / "none"),
        ]
        assert main([*argv, "--cases", str(tmp_path / "mine.yaml")]) == 0
        assert "does not exist" not in capsys.readouterr().err
        assert main([*argv, "--cases", str(tmp_path / "empty.yaml")]) == 2
        assert "empty.yaml: expected a case object or a list of cases" in capsys.readouterr().err
        assert main([*argv, "--cases", str(tmp_path / "nosuch.yaml")]) == 2
        assert "nosuch.yaml does not exist" in capsys.readouterr().err
        (tmp_path / "latin.yaml").write_bytes("message: café\n".encode("latin-1"))
        assert main([*argv, "--cases", str(tmp_path / "latin.yaml")]) == 2
        assert "latin.yaml: cannot parse: the file is not UTF-8" in capsys.readouterr().err
