"""``assistant doctor`` with ``email.enabled``, against a real IMAP server (pymap) and a real SMTP server
(aiosmtpd): both reachable and the login taken, the allowlist set; a wrong password, a server that is gone and
an empty allowlist each fail with what to do; ``trust: "any"`` is a warning that says what it lets through."""

from __future__ import annotations

import json
from pathlib import Path

from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests.email_harness import OWNER, PASSWORD, email_config
from tests.fakes.chat_server import FakeChatServer


def _doctor(capsys, config: Path, workspace: Path) -> tuple[int, dict[str, dict]]:
    code = main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(workspace)])
    return code, {c["name"]: c for c in json.loads(capsys.readouterr().out)}


def test_doctor_checks_both_servers_the_login_the_allowlist_and_says_trust_any_loudly(
    tmp_path: Path, capsys, email_imap, email_smtp
) -> None:
    Workspace(tmp_path / "ws")
    config = tmp_path / "config"
    config.mkdir()
    with FakeChatServer() as chat:
        chat.set_handler(lambda request: "OK")
        (config / "llm.json").write_text(
            json.dumps({"runners": [{"name": "l", "base_url": chat.base_url, "model": "m"}]})
        )
        section = email_config({}, email_imap, email_smtp)["email"]
        (config / "email.json").write_text(json.dumps(section))
        code, checks = _doctor(capsys, config, tmp_path / "ws")
        assert checks["email imap"]["status"] == "ok" and "INBOX opens" in checks["email imap"]["detail"]
        assert checks["email smtp"]["status"] == "ok"
        assert checks["email allowlist"]["status"] == "ok" and OWNER in checks["email allowlist"]["detail"]
        assert checks["email trust"]["status"] == "ok"

        wrong = {**section, "imap": {**section["imap"], "password": PASSWORD + "x"}, "allowed": [], "trust": "any"}
        wrong["smtp"] = {**section["smtp"], "port": 1}  # nothing listens there
        (config / "email.json").write_text(json.dumps(wrong))
        code, checks = _doctor(capsys, config, tmp_path / "ws")
    assert code == 1
    assert checks["email imap"]["status"] == "fail" and "refused the login" in checks["email imap"]["detail"]
    assert PASSWORD not in json.dumps(checks)
    assert checks["email smtp"]["status"] == "fail" and "SMTP 127.0.0.1:1" in checks["email smtp"]["detail"]
    assert (
        checks["email allowlist"]["status"] == "fail" and "config set email.allowed" in checks["email allowlist"]["fix"]
    )
    assert (
        checks["email trust"]["status"] == "warn"
        and "ANYONE can write a From header" in checks["email trust"]["detail"]
    )
