"""deploy/: the systemd unit (``systemd-analyze verify`` where it exists), the Dockerfile and compose.yaml.

Images cannot be built here (no registry for base images), so the Dockerfile is checked for what
it promises (slim base, non-root user, volumes) and its entry point and health check commands are
parsed by the real parsers and run against the fakes."""

from __future__ import annotations

import getpass
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import build_parser, main
from tests.fakes.chat_server import FakeChatServer

REPO = Path(__file__).resolve().parents[1]
UNIT = REPO / "deploy" / "assistant.service"


def _instruction(text: str, name: str) -> list[str]:
    """The JSON-array arguments of every ``NAME [...]`` / ``NAME ... CMD [...]`` line of the Dockerfile."""
    joined = text.replace("\\\n", " ")
    return [m.group(1) for m in re.finditer(rf"^{name}\b.*?(\[.*\])\s*$", joined, re.M)]


def test_systemd_unit_verifies(tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    user = getpass.getuser()
    text = UNIT.read_text().replace("/opt/assistant", str(REPO))
    text = re.sub(r"^User=.*$", f"User={user}", text, flags=re.M)
    text = re.sub(r"^Group=.*$", "", text, flags=re.M)
    unit = tmp_path / "assistant.service"
    unit.write_text(text)
    if not (REPO / ".venv" / "bin" / "assistant").exists():
        pytest.skip("no .venv/bin/assistant to point the unit at (run make install)")
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    ours = [line for line in (result.stdout + result.stderr).splitlines() if "assistant.service" in line]
    assert result.returncode == 0 and ours == [], result.stdout + result.stderr


def test_systemd_commands_parse_and_config_errors_are_not_restarted() -> None:
    text = UNIT.read_text()
    start = shlex.split(re.search(r"^ExecStart=(.*)$", text, re.M).group(1))
    assert start[0].endswith("/.venv/bin/assistant")
    assert build_parser().parse_args(start[1:]).func.__name__ == "cmd_run"
    pre = shlex.split(re.search(r"^ExecStartPre=(.*)$", text, re.M).group(1))
    assert build_parser().parse_args(pre[1:]).command == "validate"
    assert re.search(r"^RestartPreventExitStatus=2$", text, re.M)
    assert int(re.search(r"^TimeoutStopSec=(\d+)$", text, re.M).group(1)) > 20  # > shutdown_timeout_seconds


def test_dockerfile_is_slim_non_root_with_volumes_and_doctor_health_check() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.1[1-9]-slim\b", text, re.M)
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and users[-1] not in ("root", "0")
    volumes = json.loads(_instruction(text, "VOLUME")[0])
    assert set(volumes) == {"/app/config", "/app/workspace"}
    for source in re.findall(r"^COPY (.+) \S+$", text, re.M):
        for name in source.split():
            assert (REPO / name).exists(), f"COPY {name}: not in the repository"
    health = json.loads(_instruction(text, "HEALTHCHECK")[0])
    assert health[:3] == ["assistant", "doctor", "--quick"]
    assert build_parser().parse_args(health[1:]).quick
    cmd = json.loads(_instruction(text, "CMD")[-1])
    assert cmd[0] == "assistant"
    assert build_parser().parse_args(cmd[1:]).func.__name__ == "cmd_run"


def test_health_check_command_passes_when_healthy_and_fails_when_the_model_is_down(tmp_path: Path, capsys) -> None:
    health = json.loads(_instruction((REPO / "Dockerfile").read_text(), "HEALTHCHECK")[0])
    config, workspace = tmp_path / "config", tmp_path / "workspace"
    shutil.copytree(REPO / "config", config, ignore=shutil.ignore_patterns("local"))
    Workspace(workspace)
    argv = [str(config) if a == "/app/config" else str(workspace) if a == "/app/workspace" else a for a in health[1:]]
    with FakeChatServer(models=("qwen3:8b",)) as chat:
        (config / "local").mkdir()
        (config / "local" / "llm.json").write_text(
            json.dumps({"runners": [{"name": "local", "base_url": chat.base_url, "model": "qwen3:8b"}]})
        )
        assert main(argv) == 0, capsys.readouterr().out
        assert chat.chat_requests == []  # --quick: no completion every minute
    capsys.readouterr()
    assert main(argv) == 1  # the server is gone
    assert "cannot reach the model server" in capsys.readouterr().out


def test_compose_runs_the_bot_beside_ollama() -> None:
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    services = compose["services"]
    assert services["ollama"]["image"].startswith("ollama/ollama")
    bot = services["bot"]
    assert bot["build"] == "." and "ollama" in bot["depends_on"]
    mounts = {v.split(":")[1] for v in bot["volumes"]}
    assert mounts == {"/app/config", "/app/workspace"}
    assert "ports" not in services["ollama"]  # only the bot talks to the model
    setup = re.search(
        r"docker compose run --rm bot (assistant setup .*?)\n#   docker", (REPO / "compose.yaml").read_text(), re.S
    ).group(1)
    argv = shlex.split(setup.replace("\\\n#", " "))
    assert build_parser().parse_args(argv[1:]).base_url == "http://ollama:11434/v1"
