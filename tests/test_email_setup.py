"""``assistant setup`` configures the email channel (issue 43): by flags, against a real IMAP server (pymap),
the login tried with the password from the named environment variable (never written), the settings in the
local layer with ``enabled`` last, and ``doctor`` then logs in; a wrong password stops setup with
nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from messaging_llm_bot.cli.main import main
from tests.email_harness import PASSWORD
from tests.fakes.chat_server import FakeChatServer
from tests.setup_runs import channel_setup, example_config


def _setup(config: Path, tmp_path: Path, chat: FakeChatServer, imap, smtp) -> int:
    return channel_setup(
        config,
        tmp_path,
        chat,
        *("--email", "assistant@example.org", "--email-imap", f"127.0.0.1:{imap.port}"),
        *("--email-smtp", f"127.0.0.1:{smtp.port}", "--email-security", "none", "--email-user", imap.user),
        *("--email-password-env", "ASSISTANT_TEST_MAIL_PASSWORD", "--email-owner", "Owner@Example.org"),
    )


def test_setup_writes_the_email_channel_and_doctor_logs_in(tmp_path, capsys, monkeypatch, email_imap, email_smtp):
    config = example_config(tmp_path)
    with FakeChatServer() as chat:
        chat.set_handler(lambda request: "OK")
        monkeypatch.setenv("ASSISTANT_TEST_MAIL_PASSWORD", PASSWORD + "-wrong")
        assert _setup(config, tmp_path, chat, email_imap, email_smtp) == 2
        assert "refused the login" in capsys.readouterr().err and not (config / "local" / "email.json").exists()

        monkeypatch.setenv("ASSISTANT_TEST_MAIL_PASSWORD", PASSWORD)
        assert _setup(config, tmp_path, chat, email_imap, email_smtp) == 0, capsys.readouterr()
        out = capsys.readouterr().out
        assert "takes the login" in out and "answers mail from Owner@Example.org" in out
        written = json.loads((config / "local" / "email.json").read_text())
        assert written["enabled"] is True and written["allowed"] == ["owner@example.org"]
        assert written["imap"] == {
            "host": "127.0.0.1",
            "port": email_imap.port,
            "security": "none",
            "user": email_imap.user,
            "password_env": "ASSISTANT_TEST_MAIL_PASSWORD",
        }
        assert PASSWORD not in (config / "local" / "email.json").read_text()
        main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws")])
        checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert checks["email imap"]["status"] == "ok" and "logged in as 'assistant'" in checks["email imap"]["detail"]
    # The test's SMTP server takes no login: said in one sentence naming it, not a traceback.
    assert checks["email smtp"]["status"] == "fail" and "AUTH" in checks["email smtp"]["detail"]
