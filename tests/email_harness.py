"""Shared helpers for the email channel's tests: a real IMAP server (pymap) and a real SMTP server (aiosmtpd),
each started once per module and emptied per test, and an EmailService running in a thread against them."""

from __future__ import annotations

import copy
import threading
from email.message import EmailMessage
from typing import TYPE_CHECKING, Any

import pytest

from tests.fakes.smtp_server import FakeSMTPServer
from tests.waiting import wait_until

if TYPE_CHECKING:
    from tests.fakes.imap_server import FakeIMAPServer

BOT = "assistant@example.org"
OWNER = "owner@example.org"
FRIEND = "friend@example.net"
STRANGER = "mallory@evil.example"
PASSWORD = "imap-Pa55word"
PASSED = "mx.example.org; dkim=pass header.d=example.org header.s=s1; spf=none"
CURSOR = "state/email/cursor.json"


def mail(
    text: str,
    *,
    sender: str = OWNER,
    subject: str = "A question",
    message_id: str = "<q1@example.org>",
    auth: str | None = PASSED,
    headers: dict[str, str] | None = None,
    attachments: list[tuple[str, str, bytes]] = (),  # type: ignore[assignment]
) -> bytes:
    """A mail's bytes as the receiving server stored it (its Authentication-Results on top)."""
    msg = EmailMessage()
    if auth is not None:
        msg["Authentication-Results"] = auth
    msg["From"] = sender
    msg["To"] = BOT
    msg["Subject"] = subject
    msg["Date"] = "Wed, 02 Dec 2026 09:00:00 +0000"
    msg["Message-ID"] = message_id
    for name, value in (headers or {}).items():
        msg[name] = value
    msg.set_content(text)
    for name, mime, data in attachments:
        main, _, sub = mime.partition("/")
        msg.add_attachment(data, maintype=main, subtype=sub, filename=name)
    return msg.as_bytes()


def email_config(base: dict, imap: FakeIMAPServer, smtp: FakeSMTPServer, **overrides: Any) -> dict:
    """``base`` (the conftest bot_config) plus an email section for the two servers."""
    config = copy.deepcopy(base)
    config["email"] = {
        "enabled": True,
        "address": BOT,
        "imap": {"host": "127.0.0.1", "port": imap.port, "security": "none", "user": imap.user, "password": PASSWORD},
        "smtp": {"host": "127.0.0.1", "port": smtp.port, "security": "none"},
        "allowed": [OWNER, FRIEND],
        "poll_seconds": 0.1,  # the config's least: a test's mail waits a tenth of a second for the next look
        **overrides,
    }
    config.setdefault("memory", {"enabled": False})
    return config


class RunningEmail:
    """An EmailService running in a thread; ``start`` returns after its first look at the folder."""

    def __init__(self, runtime: Any, workspace: Any) -> None:
        # Imported here (and the IMAP server in its fixture): xdist's controller loads this harness (conftest's
        # pytest_plugins) and runs no bot.
        from messaging_llm_bot.channels.email.service import EmailService

        self.service: EmailService = EmailService(runtime, stop_signals=None, reminder_poll_seconds=0.3)
        self.workspace = workspace
        self.exit_code: int | None = None
        self._thread = threading.Thread(target=self._run, name="email-bot-under-test", daemon=True)

    def _run(self) -> None:
        self.exit_code = self.service.run()

    def start(self) -> RunningEmail:
        self._thread.start()
        wait_until(lambda: self.service.ready.is_set() or self.exit_code is not None, 15, "the email bot to start")
        wait_until(lambda: self.workspace.exists(CURSOR), 15, "the first look at the folder")
        return self

    def stop(self, timeout: float = 15) -> int | None:
        self.service.stop()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("email bot thread did not stop")
        return self.exit_code


@pytest.fixture(scope="module")
def email_imap():
    from tests.fakes.imap_server import FakeIMAPServer

    with FakeIMAPServer(user="assistant", password=PASSWORD) as server:
        yield server


@pytest.fixture(scope="module")
def email_smtp_server():
    with FakeSMTPServer() as server:
        yield server


@pytest.fixture
def email_smtp(email_smtp_server):
    """The module's SMTP server, emptied for this test."""
    email_smtp_server.clear()
    return email_smtp_server


@pytest.fixture
def start_email(bot_config, email_imap, email_smtp, workspace, tmp_path):
    """Factory: ``start_email(patch=None, **email_overrides)`` runs the bot; every one stops after the test."""
    from tests.telegram_harness import make_runtime

    bots: list[RunningEmail] = []

    def run(patch=None, **overrides) -> RunningEmail:
        config = email_config(bot_config, email_imap, email_smtp, **overrides)
        if patch:
            patch(config)
        bot = RunningEmail(make_runtime(config, workspace, tmp_path), workspace).start()
        bots.append(bot)
        return bot

    yield run
    for bot in bots:
        if bot._thread.is_alive():
            bot.stop()


def wait_mails(smtp: FakeSMTPServer, count: int, timeout: float = 20) -> list[EmailMessage]:
    wait_until(lambda: len(smtp.messages) >= count, timeout, f"{count} mail(s) sent")
    return list(smtp.messages)


def body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content())
