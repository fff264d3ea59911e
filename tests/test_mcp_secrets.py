"""An MCP server URL's password and ``?api_key=``, and an environment value under a key like ``OPENAI_KEY``,
are used and never shown: not by ``assistant skills list``, ``doctor`` or ``config show`` (the real CLI),
and not by the bot process (its log, its traces and conversation log, what the model is sent), also
during an outage, when the server's errors name its URL. Each output is scanned for the secrets, and for
the place they would be (the URL is shown, with ``***``), so a test cannot pass by showing nothing."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.cli_inprocess import CliRun, run_cli
from tests.crash_bot import BotProcess, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.mcp_servers import HttpMcpServer, command

PASSWORD = "pw-hunter2-mcp-secret"
TOKEN = "tok-5f3a9c2e7b1d0a4e"
OPENAI = "sk-live-0123456789abcdef0123"
SECRETS = (PASSWORD, TOKEN, OPENAI)


def _secret_url(port: int) -> str:
    return f"http://reader:{PASSWORD}@127.0.0.1:{port}/mcp?api_key={TOKEN}&lang=en"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _servers(http: HttpMcpServer, timeout: float = 8) -> dict:
    """``timeout``: the web server's, which a call during its outage waits out whole."""
    return {
        "web": {"url": _secret_url(http.port), "tools": ["echo"], "timeout_seconds": timeout, "capabilities": ["read"]},
        "gone": {"url": _secret_url(_closed_port()), "timeout_seconds": 8},
        "local": {
            **command("tools"),
            "env": {"OPENAI_KEY": OPENAI},
            "tools": ["echo", "getenv"],
            "capabilities": ["read"],
        },
        "leaky": {**command("crash-env"), "env": {"OPENAI_KEY": OPENAI}},
    }


def _leaks(text: str) -> list[str]:
    """The secrets in ``text``, whole or as a run of 8 of their characters (a cut or masked echo)."""
    return [s for s in SECRETS if any(s[i : i + 8] in text for i in range(len(s) - 7))]


def _assistant(*args: str) -> CliRun:
    """The command in this process (tests/cli_inprocess.py: its output and what it logs, captured); the MCP
    servers it lists or checks are real processes (tests/fakes/mcp_servers.py)."""
    return run_cli(*args)


@pytest.fixture(scope="module")
def http():
    with HttpMcpServer() as server:
        yield server


def test_the_cli_shows_no_secret_of_an_mcp_server(tmp_path, http) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "mcp.json").write_text(json.dumps({"servers": _servers(http)}))
    runs = {
        "skills list": _assistant("skills", "list", "--config", str(config)),
        "skills list --json": _assistant("skills", "list", "--json", "--config", str(config)),
        "doctor": _assistant(
            "doctor", "--quick", "--json", "--config", str(config), "--workspace", str(tmp_path / "ws")
        ),
        "config show": _assistant("config", "show", "--config", str(config)),
        "config show --json": _assistant("config", "show", "--json", "--config", str(config)),
        "config get": _assistant("config", "get", "mcp.servers", "--config", str(config)),
    }
    for name, run in runs.items():
        said = run.stdout + run.stderr
        assert "Traceback" not in said, (name, said[-2000:])
        assert not _leaks(said), (name, _leaks(said), said[-3000:])
    # The servers are there, shown without their secrets (the test would pass on an empty output otherwise).
    listed = {row["name"]: row for row in json.loads(runs["skills list --json"].stdout)}
    assert listed["web_echo"]["loaded"] and listed["local_echo"]["loaded"]
    assert "is not reachable" in listed["mcp:gone"]["error"] and "reader:***@127.0.0.1" in listed["mcp:gone"]["error"]
    checks = {check["name"]: check for check in json.loads(runs["doctor"].stdout)}
    assert checks["mcp web"]["status"] == "ok" and "api_key=***&lang=en" in checks["mcp web"]["detail"]
    assert checks["mcp gone"]["status"] == "fail" and "reader:***@" in checks["mcp gone"]["detail"]
    assert "(its last output: fatal: the key *** was refused)" in listed["mcp:leaky"]["error"]  # its own words
    shown = json.loads(runs["config show --json"].stdout)["mcp"]["servers"]
    assert shown["web"]["url"] == f"http://reader:***@127.0.0.1:{http.port}/mcp?api_key=***&lang=en"
    assert shown["local"]["env"] == {"OPENAI_KEY": "***"}
    assert f"mcp.servers.web.url = http://reader:***@127.0.0.1:{http.port}/mcp" in runs["config show"].stdout


def _call(skill: str, args: dict) -> str:
    return json.dumps({"skill": skill, "args": args})


def test_the_bot_keeps_an_mcp_servers_secrets_out_of_its_log_traces_and_model_requests(
    tmp_path: Path, bot_config: dict, chat_server
) -> None:
    """A working call, then the server goes away: the next calls fail in one sentence naming the URL (its
    secrets as ``***``) in what the model reads, the trace, the conversation log and the bot's log."""
    workspace = tmp_path / "ws"
    with HttpMcpServer() as server, FakeBotAPI() as fake:
        extra = {
            "mcp": {"servers": _servers(server, timeout=3)},  # its start on loopback takes a fraction
            "policy": {"skills": {"web_echo": "allow", "local_getenv": "allow"}},
        }
        config = write_bot_config(tmp_path / "config.json", bot_config, fake, extra=extra)
        with BotProcess(config, workspace, tmp_path / "bot.log") as bot:
            bot.start().wait_ready(120)
            chat_server.enqueue(
                _call("web_echo", {"text": "hello"}),
                _call("local_getenv", {"name": "OPENAI_KEY"}),  # a server that says back its key
                '{"reply": "It echoed."}',
            )
            fake.send_message("echo hello", user_id=1)
            fake.wait_for(lambda: "It echoed." in sent_texts(fake, 1), timeout=60)
            server.stop()  # the outage: the next calls fail, and say why
            chat_server.enqueue(
                _call("web_echo", {"text": "again"}),
                _call("web_echo", {"text": "and again"}),
                '{"reply": "The server is down."}',
            )
            fake.send_message("echo again", user_id=1)
            fake.wait_for(lambda: "The server is down." in sent_texts(fake, 1), timeout=90)
            assert bot.terminate() == 0
            log = bot.log_text()
    said_back = json.dumps(chat_server.chat_requests[2]["messages"][-1], ensure_ascii=False)
    assert "OPENAI_KEY=***" in said_back, said_back
    requests = json.dumps([dict(r) for r in chat_server.chat_requests], ensure_ascii=False)
    fed_back = json.dumps(chat_server.chat_requests[-1]["messages"][-3:], ensure_ascii=False)
    assert "is restarting and did not answer within 3 s" in fed_back, fed_back[-2000:]
    assert f"reader:***@127.0.0.1:{server.port}/mcp?api_key=***" in fed_back  # the URL, without its secrets
    stored = "\n".join(p.read_text("utf-8", "replace") for p in workspace.rglob("*") if p.is_file())
    assert "is restarting and did not answer" in stored  # the trace and the conversation log hold the error
    assert "reader:***@127.0.0.1" in log  # the log names the server that did not start
    for where, text in (("model requests", requests), ("workspace", stored), ("bot log", log)):
        assert not _leaks(text), (where, _leaks(text))
    assert not _leaks("\n".join(sent_texts(fake, 1)))
