"""``assistant mcp add|list|remove|test`` through the real CLI, against the real ``mcp-server-time`` from PyPI and
the SDK's own servers (tests/fakes/mcp_servers.py); the web page's Skills list with an MCP server's tools."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
import requests

from assistant_framework.web import WebServer, standalone_parts
from tests import preload
from tests.cli_inprocess import CliRun, run_cli
from tests.fakes.mcp_servers import command

REPO = Path(__file__).resolve().parents[1]
TRACKED = {"servers": {"time": {"enabled": False, "command": "uvx", "args": ["mcp-server-time"]}}}
WEB_TOKEN = "web-token-for-the-mcp-skills-page-0123"


def time_server() -> list[str]:
    """The command line of the real ``mcp-server-time`` (a process the CLI starts: tests/tiers.py sees it here)."""
    return preload.command_line([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])


def cli(*args: str) -> CliRun:
    """The command in this process (tests/cli_inprocess.py): what is checked is what it says, writes and exits
    with; the MCP servers it starts are real processes."""
    return run_cli(*args)


@pytest.fixture
def config(tmp_path) -> Path:
    """A config directory whose tracked mcp.json holds a disabled server, as the shipped one does."""
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "mcp.json").write_text(json.dumps(TRACKED, indent=2) + "\n")
    (folder / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
    return folder


def test_mcp_add_then_skills_list_names_its_tools_and_mcp_test_exits_0(config) -> None:
    added = cli("mcp", "add", "clock", "--config", str(config), "--capability", "read", "--", *time_server())
    assert added.returncode == 0, added.stderr
    local = config / "local" / "mcp.json"
    assert "local layer" in added.stdout and "mcp test clock" in added.stdout
    entry = json.loads(local.read_text())["servers"]["clock"]
    assert entry == {"command": sys.executable, "args": time_server()[1:], "capabilities": ["read"]}
    assert stat.S_IMODE(os.stat(local).st_mode) == 0o600  # the local layer holds tokens and keys
    assert json.loads((config / "mcp.json").read_text()) == TRACKED  # the tracked file is untouched

    listed = cli("skills", "list", "--json", "--config", str(config))
    assert listed.returncode == 0, listed.stdout + listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    for name in ("clock_get_current_time", "clock_convert_time"):
        assert rows[name]["loaded"] and rows[name]["from"].startswith("MCP server 'clock'"), rows[name]

    tested = cli("mcp", "test", "clock", "--config", str(config))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    lines = tested.stdout.splitlines()
    assert lines[0].startswith("MCP server 'clock' answered: 2 tools")
    assert sorted(line.split()[0] for line in lines[1:]) == ["clock_convert_time", "clock_get_current_time"]
    as_json = json.loads(cli("mcp", "test", "clock", "--json", "--config", str(config)).stdout)
    assert as_json["answered"] and {t["skill"] for t in as_json["tools"]} == {
        "clock_get_current_time",
        "clock_convert_time",
    }


def test_mcp_list_shows_each_server_with_its_file_and_no_secret(config) -> None:
    url = "http://127.0.0.1:9/mcp?token=url-secret-0123456789"
    added = cli(
        "mcp",
        "add",
        "remote",
        "--url",
        url,
        "--header",
        "Authorization=Bearer header-secret-0123",
        "--config",
        str(config),
    )
    assert added.returncode == 0, added.stderr
    assert cli("mcp", "add", "clock", "--config", str(config), "--", *time_server()).returncode == 0
    listed = cli("mcp", "list", "--json", "--config", str(config))
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == {"time", "remote", "clock"}
    assert rows["time"]["enabled"] is False and rows["time"]["file"] == os.path.relpath(config / "mcp.json")
    assert rows["clock"]["command"] == sys.executable and rows["clock"]["file"].endswith("local/mcp.json")
    assert rows["remote"]["transport"] == "http" and rows["remote"]["url"].endswith("token=***")
    assert rows["remote"]["headers"] == {"Authorization": "***"}
    text = cli("mcp", "list", "--config", str(config))
    assert text.returncode == 0 and "remote" in text.stdout and "clock" in text.stdout
    for shown in (listed.stdout, text.stdout):
        assert "url-secret" not in shown and "header-secret" not in shown


def test_mcp_test_of_an_unreachable_url_says_so_without_its_secrets(config) -> None:
    url = "http://127.0.0.1:9/mcp?token=url-secret-0123456789"  # port 9 (discard): nothing listens
    header = "Authorization=Bearer header-secret-0123"
    assert cli("mcp", "add", "remote", "--url", url, "--header", header, "--config", str(config)).returncode == 0
    for extra in ((), ("--json",)):
        run = cli("mcp", "test", "remote", "--config", str(config), *extra)
        assert run.returncode == 1, run.stdout + run.stderr
        assert "127.0.0.1:9" in run.stdout and ("did not answer" in run.stdout or '"answered": false' in run.stdout)
        assert "url-secret" not in run.stdout + run.stderr and "header-secret" not in run.stdout + run.stderr


def test_mcp_remove_takes_it_out_of_the_local_layer_and_refuses_a_tracked_one(config) -> None:
    assert cli("mcp", "add", "clock", "--config", str(config), "--", *time_server()).returncode == 0
    removed = cli("mcp", "remove", "clock", "--config", str(config))
    assert removed.returncode == 0, removed.stderr
    assert "clock" not in json.loads((config / "local" / "mcp.json").read_text())["servers"]
    rows = json.loads(cli("skills", "list", "--json", "--config", str(config)).stdout)
    assert not [row for row in rows if row["name"].startswith("clock_")]

    tracked = cli("mcp", "remove", "time", "--config", str(config))
    assert tracked.returncode == 2 and "mcp.json" in tracked.stderr and "tracked" in tracked.stderr
    assert json.loads((config / "mcp.json").read_text()) == TRACKED
    unknown = cli("mcp", "remove", "nosuch", "--config", str(config))
    assert unknown.returncode == 2 and "no MCP server named 'nosuch'" in unknown.stderr


@pytest.mark.parametrize(
    "args, says",
    [
        (["time", "--", "python3", "-m", "x"], "already configured"),  # the tracked one: no half-merged server
        (["9lives", "--", "python3"], "does not match"),  # the name starts the skill names
        (["both", "--url", "http://127.0.0.1:9/mcp", "--", "python3"], "not both"),
        (["neither"], "give the server"),
        (["ftp", "--url", "ftp://127.0.0.1/"], "http:// or https://"),
        (["pairs", "--url", "http://127.0.0.1:9/mcp", "--header", "no-equals-sign"], "NAME=VALUE"),
        (["env", "--url", "http://127.0.0.1:9/mcp", "--env", "A=1"], "--env is for a server the assistant starts"),
        (["typo", "--bogus", "--", "python3"], "unrecognized arguments: --bogus"),
    ],
)
def test_mcp_add_refuses_bad_input_with_exit_2_and_writes_nothing(config, args, says) -> None:
    run = cli("mcp", "add", *args[:1], "--config", str(config), *args[1:])
    assert run.returncode == 2, run.stdout + run.stderr
    assert says in run.stderr and "Traceback" not in run.stderr
    assert not (config / "local").exists()
    assert json.loads((config / "mcp.json").read_text()) == TRACKED


def test_mcp_test_exits_1_with_one_sentence_when_the_server_fails_and_2_for_no_such_server(config) -> None:
    broken = command("crash")
    added = cli("mcp", "add", "broken", "--config", str(config), "--", broken["command"], *broken["args"])
    assert added.returncode == 0, added.stderr
    # The fake server is a module of this checkout: run it from here.
    run = run_cli("mcp", "test", "broken", "--config", str(config), cwd=REPO)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "did not answer" in run.stdout and "no database at /nowhere" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    missing = cli("mcp", "test", "nosuch", "--config", str(config))
    assert missing.returncode == 2 and "no MCP server named 'nosuch'" in missing.stderr


def test_the_web_pages_skills_list_shows_mcp_tools_with_their_server(config, tmp_path) -> None:
    assert cli("mcp", "add", "clock", "--config", str(config), "--", *time_server()).returncode == 0
    (config / "web.json").write_text(json.dumps({"enabled": False, "token": WEB_TOKEN}))
    parts = standalone_parts(config, tmp_path / "ws")
    server = WebServer(parts, host="127.0.0.1", port=0)
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}
        rows = {
            row["name"]: row for row in requests.get(f"{base}/api/skills", headers=bearer, timeout=60).json()["skills"]
        }
        assert rows["clock_get_current_time"]["mcp_server"] == "clock"
        assert rows["notes"]["mcp_server"] is None  # a built-in skill
        # Stored names are isolated for direction (<bdi>): the page's text is read without the tags.
        page = (
            requests.get(f"{base}/skills", headers=bearer, timeout=60).text.replace("<bdi>", "").replace("</bdi>", "")
        )
        assert "clock_convert_time" in page and "(MCP server clock)" in page
    finally:
        server.stop()
        parts.close()
