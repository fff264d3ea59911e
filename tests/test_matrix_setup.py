"""``assistant setup`` configures the Matrix channel (issue 43): by flags, against the session's real Synapse,
the login tried with the password from the named environment variable (never written), the settings in the
local layer with ``enabled`` last, and ``doctor`` then logs in; a wrong password stops setup with nothing
written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from messaging_llm_bot.cli.main import main
from tests.fakes.chat_server import FakeChatServer
from tests.matrix_harness import PASSWORD, MatrixWorld, Synapse

REPO = Path(__file__).resolve().parents[1]


def test_setup_writes_the_matrix_channel_and_doctor_logs_in(tmp_path, capsys, monkeypatch, matrix: MatrixWorld) -> None:
    assert isinstance(matrix.server, Synapse)
    config = tmp_path / "config"
    shutil.copytree(REPO / "config", config, ignore=shutil.ignore_patterns("local"))

    def setup() -> int:
        return main(
            [
                *("setup", "--yes", "--no-telegram", "--no-test", "--config", str(config)),
                *("--workspace", str(tmp_path / "ws"), "--base-url", chat.base_url, "--timezone", "UTC"),
                *("--matrix", matrix.bot.user_id, "--matrix-homeserver", matrix.server.url),
                *("--matrix-password-env", "ASSISTANT_TEST_MATRIX_PASSWORD", "--matrix-owner", matrix.owner.user_id),
            ]
        )

    with FakeChatServer() as chat:
        chat.set_handler(lambda request: "OK")
        monkeypatch.setenv("ASSISTANT_TEST_MATRIX_PASSWORD", PASSWORD + "-wrong")
        assert setup() == 2
        assert "refused the login" in capsys.readouterr().err and not (config / "local" / "matrix.json").exists()

        monkeypatch.setenv("ASSISTANT_TEST_MATRIX_PASSWORD", PASSWORD)
        assert setup() == 0, capsys.readouterr()
        out = capsys.readouterr().out
        assert "takes the login" in out and f"joins the rooms {matrix.owner.user_id} invites it to" in out
        written = json.loads((config / "local" / "matrix.json").read_text())
        assert written == {
            "homeserver": matrix.server.url,
            "user_id": matrix.bot.user_id,
            "password_env": "ASSISTANT_TEST_MATRIX_PASSWORD",
            "allowed": [matrix.owner.user_id],
            "enabled": True,
        }
        assert PASSWORD not in (config / "local" / "matrix.json").read_text()
        main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws")])
        checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert checks["matrix login"]["status"] == "ok" and matrix.bot.user_id in checks["matrix login"]["detail"]
    assert checks["matrix homeserver"]["status"] == "ok" and checks["matrix allowlist"]["status"] == "ok"
