"""Issue 43's email guarantees through the real bot process (``python -m messaging_llm_bot``, email only)
against a real IMAP server (pymap), a real SMTP server (aiosmtpd) and the fake model server: the owner's mail
proven by ``Authentication-Results: ... dkim=pass`` gets one reply, threaded; the same mail without a passing
result is not the owner's (no model call, no reply); a restart answers nothing twice; a SIGKILL during the
model call is answered once after the restart. Two tests, so each stays well inside the tiers' bound."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.crash_bot import BotProcess
from tests.email_harness import CURSOR, OWNER, body, email_config, mail, wait_mails
from tests.fakes.chat_server import FakeChatServer
from tests.waiting import wait_until


@dataclass
class EmailBot:
    process: BotProcess
    start: Callable[[], None]
    workspace: Path

    def passed(self, uid: int) -> bool:
        """The bot's cursor is at or past ``uid``: it looked at that mail (and stored it or passed it over)."""
        path = self.workspace / CURSOR
        return path.exists() and json.loads(path.read_text())["last_uid"] >= uid


@pytest.fixture
def email_bot(tmp_path, bot_config, chat_server, email_imap, email_smtp) -> Iterator[EmailBot]:
    config = email_config(bot_config, email_imap, email_smtp)
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
        yield EmailBot(bot, start, workspace)
        assert "Traceback" not in bot.log_text()


@pytest.mark.timeout(90)
def test_the_owners_proven_mail_is_answered_once_and_an_unproven_one_not_across_a_restart(
    email_bot: EmailBot, chat_server: FakeChatServer, email_imap, email_smtp
):
    # The owner's proven mail: one reply, in its thread.
    chat_server.enqueue('{"reply": "Paris is the capital."}')
    email_imap.append("INBOX", mail("What is the capital of France?", message_id="<p1@example.org>"))
    [reply] = wait_mails(email_smtp, 1)
    assert reply["In-Reply-To"] == "<p1@example.org>" and reply["Subject"] == "Re: A question"
    assert body(reply).strip() == "Paris is the capital." and email_smtp.recipients == [[OWNER]]
    # The same mail without a passing result: not the owner's, so no model call and no reply.
    email_imap.append("INBOX", mail("What is the capital of France?", message_id="<p2@example.org>", auth=None))
    failed = "mx.example.org; dkim=fail header.d=example.org; spf=softfail smtp.mailfrom=example.org"
    uid = email_imap.append("INBOX", mail("Tell me my notes.", message_id="<p3@example.org>", auth=failed))
    wait_until(lambda: email_bot.passed(uid), 20, "the bot looking at both")
    assert len(chat_server.chat_requests) == 1 and len(email_smtp.messages) == 1
    # A restart answers nothing twice: the next mail is the only one answered after it.
    assert email_bot.process.terminate() == 0, email_bot.process.run_log()[-3000:]
    email_bot.start()
    chat_server.enqueue('{"reply": "Second answer."}')
    email_imap.append("INBOX", mail("And Italy?", message_id="<p4@example.org>"))
    wait_mails(email_smtp, 2)
    assert email_bot.process.terminate() == 0, email_bot.process.run_log()[-3000:]
    assert [body(m).strip() for m in email_smtp.messages] == ["Paris is the capital.", "Second answer."]
    assert [m["In-Reply-To"] for m in email_smtp.messages] == ["<p1@example.org>", "<p4@example.org>"]
    assert len(chat_server.chat_requests) == 2
    assert "claims to be from owner@example.org" in email_bot.process.log_text()


@pytest.mark.timeout(90)
def test_a_sigkill_during_the_model_call_is_answered_once_after_the_restart(
    email_bot: EmailBot, chat_server: FakeChatServer, email_imap, email_smtp
):
    chat_server.enqueue({"content": json.dumps({"reply": "too late"}), "delay": 30})
    email_imap.append("INBOX", mail("A slow one.", message_id="<k1@example.org>"))
    assert chat_server.wait_for_requests(1, timeout=20, path="/chat/completions")
    email_bot.process.kill()
    chat_server.reset()
    chat_server.enqueue('{"reply": "Answered after the kill."}')
    email_bot.start()
    [reply] = wait_mails(email_smtp, 1)
    assert body(reply).strip() == "Answered after the kill." and reply["In-Reply-To"] == "<k1@example.org>"
    assert email_bot.process.terminate() == 0, email_bot.process.run_log()[-3000:]
    assert len(email_smtp.messages) == 1 and len(chat_server.chat_requests) == 1  # asked once more, sent once


@pytest.mark.timeout(90)
def test_a_second_mail_in_the_thread_joins_the_answer_in_progress_and_one_reply_answers_both(
    email_bot: EmailBot, chat_server: FakeChatServer, email_imap, email_smtp
):
    """Busy mode steer (the default) through the real process: the owner's second mail in the thread arrives
    while the fake model holds the first request; it is in the next request of the same turn, and one reply
    mail, in the thread, answers both; no second turn runs and both leave the inbox."""
    from assistant_framework.inbox import Inbox
    from assistant_framework.workspace import Workspace
    from tests.held_model import HeldModel, user_texts

    model = HeldModel(chat_server)
    try:
        email_imap.append("INBOX", mail("first: book the table for Anna", message_id="<s1@example.org>"))
        assert chat_server.wait_for_requests(1, timeout=20, path="/chat/completions")
        thread = {"In-Reply-To": "<s1@example.org>", "References": "<s1@example.org>"}
        email_imap.append("INBOX", mail("no, the other Anna", message_id="<s2@example.org>", headers=thread))
        wait_until(lambda: "joined the turn running" in email_bot.process.run_log(), 20, "the second mail to join")
        model.release.set()
        [reply] = wait_mails(email_smtp, 1)
    finally:
        model.release.set()
    assert body(reply).strip() == "answer to: first: book the table for Anna + no, the other Anna"
    assert reply["In-Reply-To"] == "<s1@example.org>"
    requests = chat_server.chat_requests
    assert len(requests) == 2 and user_texts(requests[1])[-1].strip() == "no, the other Anna"
    wait_until(lambda: Inbox(Workspace(email_bot.workspace)).pending() == [], 20, "both mails completed")
    assert email_bot.process.terminate() == 0, email_bot.process.run_log()[-3000:]
    assert len(email_smtp.messages) == 1 and len(chat_server.chat_requests) == 2  # no second turn
