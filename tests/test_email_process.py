"""Issue 43's email guarantees through the real bot process (``python -m messaging_llm_bot``, email only)
against a real IMAP server (pymap), a real SMTP server (aiosmtpd) and the fake model server: the owner's mail
proven by ``Authentication-Results: ... dkim=pass`` gets one reply, threaded; the same mail without a passing
result is not the owner's (no model call, no reply); a restart answers nothing twice; a SIGKILL during the
model call is answered once after the restart."""

from __future__ import annotations

import json

import pytest

from tests.crash_bot import BotProcess
from tests.email_harness import CURSOR, OWNER, body, email_config, mail, wait_mails
from tests.fakes.chat_server import FakeChatServer
from tests.waiting import wait_until


def _passed_uid(workspace, uid: int) -> bool:
    """The bot's cursor is at or past ``uid``: it looked at that mail (and stored it or passed it over)."""
    path = workspace / CURSOR
    return path.exists() and json.loads(path.read_text())["last_uid"] >= uid


@pytest.mark.timeout(120)
def test_the_owners_mail_through_the_bot_process_once_across_a_restart_and_a_kill(
    tmp_path, bot_config, email_imap, email_smtp
):
    with FakeChatServer() as model:
        base = {**bot_config, "llm": {**bot_config["llm"], "runners": [{**bot_config["llm"]["runners"][0]}]}}
        base["llm"]["runners"][0]["base_url"] = model.base_url
        config = email_config(base, email_imap, email_smtp)
        config["runtime"] = {**config["runtime"], "log_level": "INFO", "shutdown_timeout_seconds": 2}
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        workspace = tmp_path / "workspace"
        with BotProcess(path, workspace, tmp_path / "bot.log") as bot:

            def start() -> None:
                bot.start()
                wait_until(lambda: "email: serving" in bot.run_log() or bot.proc.poll() is not None, 30, "the start")
                wait_until(lambda: (workspace / CURSOR).exists(), 30, "the first look at the folder")

            start()
            # The owner's proven mail: one reply, in its thread.
            model.enqueue('{"reply": "Paris is the capital."}')
            email_imap.append("INBOX", mail("What is the capital of France?", message_id="<p1@example.org>"))
            [reply] = wait_mails(email_smtp, 1)
            assert reply["In-Reply-To"] == "<p1@example.org>" and reply["Subject"] == "Re: A question"
            assert body(reply).strip() == "Paris is the capital." and email_smtp.recipients == [[OWNER]]
            # The same mail without a passing result: not the owner's, so no model call and no reply.
            uid = email_imap.append(
                "INBOX", mail("What is the capital of France?", message_id="<p2@example.org>", auth=None)
            )
            failed = "mx.example.org; dkim=fail header.d=example.org; spf=softfail smtp.mailfrom=example.org"
            uid = email_imap.append("INBOX", mail("Tell me my notes.", message_id="<p3@example.org>", auth=failed))
            wait_until(lambda: _passed_uid(workspace, uid), 20, "the bot looking at both")
            assert len(model.chat_requests) == 1 and len(email_smtp.messages) == 1
            # A restart answers nothing twice: the next mail is the only one answered after it.
            assert bot.terminate() == 0, bot.run_log()[-3000:]
            start()
            model.enqueue('{"reply": "Second answer."}')
            email_imap.append("INBOX", mail("And Italy?", message_id="<p4@example.org>"))
            wait_mails(email_smtp, 2)
            # A SIGKILL while the model works on a mail: answered once, by the next start.
            model.enqueue({"content": json.dumps({"reply": "too late"}), "delay": 30})
            email_imap.append("INBOX", mail("A slow one.", message_id="<p5@example.org>"))
            assert model.wait_for_requests(3, timeout=20, path="/chat/completions")
            bot.kill()
            model.reset()
            model.enqueue('{"reply": "Answered after the kill."}')
            start()
            wait_mails(email_smtp, 3)
            assert bot.terminate() == 0, bot.run_log()[-3000:]
            log = bot.log_text()
    answers = [body(m).strip() for m in email_smtp.messages]
    assert answers == ["Paris is the capital.", "Second answer.", "Answered after the kill."]
    assert [m["In-Reply-To"] for m in email_smtp.messages] == [
        "<p1@example.org>",
        "<p4@example.org>",
        "<p5@example.org>",
    ]
    assert len(model.chat_requests) == 1  # after the kill: asked once more
    assert "claims to be from owner@example.org" in log and "Traceback" not in log
