"""The email channel over TLS, against real servers that speak only TLS: pymap (IMAPS, and IMAP that refuses the
login before STARTTLS) and aiosmtpd (SMTPS, and SMTP that refuses MAIL before STARTTLS), with a certificate for
127.0.0.1 signed by a CA made for this module (tests/certs.py). A mail is fetched over IMAPS and answered over
SMTP with STARTTLS, and the other way round; the trust is the server's ``ca_file`` or ``SSL_CERT_FILE``
(assistant_framework/tls.py). A certificate no trusted CA signed, or made out to another name, is one sentence
naming what to set, no traceback, and the mail waits for the next look. The ``mail`` skill's SMTP takes the
same trust and says the same sentence.

The four servers are started once for the module (a few ms each) and the CA made once (three openssl runs)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path

import pytest

from assistant_framework.config.settings.email import ImapSettings
from assistant_framework.config.settings.mail import SmtpSettings
from assistant_framework.skills.loader import load_skill_folder
from assistant_framework.skills.spec import SkillContext
from assistant_framework.workspace import Workspace
from tests.certs import make_ca
from tests.email_harness import BOT, CURSOR, OWNER, PASSWORD, body, mail, wait_mails
from tests.fakes.imap_server import FakeIMAPServer
from tests.fakes.smtp_server import FakeSMTPServer
from tests.waiting import wait_until


@dataclass(frozen=True)
class Certs:
    """The module's CA (what a client trusts) and the servers' certificate for 127.0.0.1."""

    ca: Path
    cert: Path
    key: Path


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    ca = make_ca(tmp_path_factory.mktemp("pki"), "Mail test CA")
    if ca is None:
        pytest.skip("the openssl binary is not installed; it makes the test certificates")
    return Certs(ca.cert, *ca.issue("127.0.0.1", "IP:127.0.0.1"))


def _imap(certs: Certs, security: str) -> Iterator[FakeIMAPServer]:
    with FakeIMAPServer(
        "assistant", PASSWORD, security=security, cert_file=certs.cert, key_file=certs.key, ca_file=certs.ca
    ) as server:
        yield server


def _smtp(certs: Certs, security: str) -> Iterator[FakeSMTPServer]:
    with FakeSMTPServer(security=security, cert_file=certs.cert, key_file=certs.key) as server:
        yield server


@pytest.fixture(scope="module")
def email_imap(certs: Certs) -> Iterator[FakeIMAPServer]:
    """The harness's IMAP server (tests/email_harness.py), here speaking only TLS (IMAPS)."""
    yield from _imap(certs, "tls")


@pytest.fixture(scope="module")
def email_smtp_server(certs: Certs) -> Iterator[FakeSMTPServer]:
    """The harness's SMTP server, here refusing mail before STARTTLS."""
    yield from _smtp(certs, "starttls")


@pytest.fixture(scope="module")
def imap_starttls(certs: Certs) -> Iterator[FakeIMAPServer]:
    yield from _imap(certs, "starttls")


@pytest.fixture(scope="module")
def smtps(certs: Certs) -> Iterator[FakeSMTPServer]:
    yield from _smtp(certs, "tls")


def _servers(imap: dict[str, object], smtp: dict[str, object]) -> Callable[[dict], None]:
    """A config patch: these keys over the harness's ``email.imap`` and ``email.smtp``."""

    def patch(config: dict) -> None:
        config["email"]["imap"].update(imap)
        config["email"]["smtp"].update(smtp)

    return patch


def test_a_mail_fetched_over_imaps_is_answered_over_smtp_with_starttls(
    start_email, email_imap, email_smtp, chat_server, certs
):
    chat_server.enqueue('{"reply": "Yes, over **TLS**."}')
    ca = str(certs.ca)
    start_email(patch=_servers({"security": "ssl", "ca_file": ca}, {"security": "starttls", "ca_file": ca}))
    email_imap.append("INBOX", mail("Is this private?", message_id="<tls-1@example.org>"))
    [reply] = wait_mails(email_smtp, 1)
    assert reply["In-Reply-To"] == "<tls-1@example.org>" and email_smtp.recipients == [[OWNER]]
    assert body(reply).strip() == "Yes, over TLS."


def test_a_mail_fetched_with_starttls_is_answered_over_smtps_trusting_ssl_cert_file(
    start_email, imap_starttls, smtps, chat_server, certs, monkeypatch
):
    """No ``ca_file``: the trust is OpenSSL's default, which honours ``SSL_CERT_FILE`` as it did before."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca))
    smtps.clear()
    chat_server.enqueue('{"reply": "Received."}')
    start_email(
        patch=_servers({"security": "starttls", "port": imap_starttls.port}, {"security": "ssl", "port": smtps.port})
    )
    imap_starttls.append("INBOX", mail("And this way?", message_id="<tls-2@example.org>"))
    [reply] = wait_mails(smtps, 1)
    assert reply["In-Reply-To"] == "<tls-2@example.org>" and body(reply).strip() == "Received."


def test_an_untrusted_imap_certificate_is_one_sentence_and_the_mail_waits_for_the_next_look(
    start_email, email_imap, email_smtp, chat_server, certs, workspace, monkeypatch, caplog
):
    """The owner's mail is above the cursor; the server's CA is in no store the bot trusts: the log says so once,
    in one sentence naming email.imap.ca_file, nothing is fetched or answered. Once the CA is trusted (here
    ``SSL_CERT_FILE``, read again at the next connect) the same mail is answered at the next look."""
    caplog.set_level(logging.INFO, logger="messaging_llm_bot.channels.email")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    uid = email_imap.append("INBOX", mail("Are you there?", message_id="<tls-3@example.org>"))
    now = datetime.now(UTC).isoformat(timespec="seconds")
    where = {"folder": "INBOX", "uidvalidity": email_imap.uidvalidity("INBOX"), "last_uid": uid - 1}
    workspace.write_json(CURSOR, {**where, "checked_at": now})
    chat_server.enqueue('{"reply": "Now I am."}')
    start_email(patch=_servers({"security": "ssl"}, {"security": "starttls", "ca_file": str(certs.ca)}))

    def refusals() -> list[str]:
        return [r.getMessage() for r in caplog.records if "certificate" in r.getMessage()]

    wait_until(lambda: refusals(), 10, "the refused certificate in the log")
    [said] = refusals()
    assert said.startswith(f"email: IMAP 127.0.0.1:{email_imap.port} (ssl): the server's certificate is not trusted")
    assert "set email.imap.ca_file to the certificate (PEM) of the CA that signed it, or SSL_CERT_FILE" in said
    assert said.endswith("; trying again at the next look")
    assert workspace.read_json(CURSOR)["last_uid"] == uid - 1 and not chat_server.chat_requests

    monkeypatch.setenv("SSL_CERT_FILE", str(certs.ca))
    [reply] = wait_mails(email_smtp, 1)
    assert reply["In-Reply-To"] == "<tls-3@example.org>" and body(reply).strip() == "Now I am."
    assert len(refusals()) == 1  # said once for the outage, not at every look
    assert not [r for r in caplog.records if r.exc_info] and "Traceback" not in caplog.text


def test_a_certificate_for_another_name_untrusted_servers_and_an_unreadable_ca_file(
    email_imap, imap_starttls, smtps, email_smtp, certs, tmp_path
):
    """Through the channel's server calls (email/servers.py), as the doctor and ``setup --email`` use them."""
    from messaging_llm_bot.channels.email.servers import Mailbox, MailServerError, send

    ca = str(certs.ca)
    login = {"user": "assistant", "password": PASSWORD}
    # The certificate is for 127.0.0.1, not localhost: its CA is trusted, its name is not the host's.
    mailbox = Mailbox(ImapSettings(host="localhost", port=email_imap.port, ca_file=ca, **login), "INBOX", 10**6)
    with pytest.raises(MailServerError) as other_name:
        mailbox.poll(None, None)
    assert f"IMAP localhost:{email_imap.port} (ssl): the server's certificate is not for this name" in str(
        other_name.value
    )
    assert "set email.imap.host to a name it carries" in str(other_name.value)
    # STARTTLS to a server whose CA is in no store the bot trusts: refused, the plain connection closed.
    starttls = ImapSettings(host="127.0.0.1", port=imap_starttls.port, security="starttls", **login)
    with pytest.raises(MailServerError) as untrusted_imap:
        Mailbox(starttls, "INBOX", 1).poll(None, None)
    assert "(starttls): the server's certificate is not trusted" in str(untrusted_imap.value)
    assert "set email.imap.ca_file" in str(untrusted_imap.value)
    by_its_name = Mailbox(ImapSettings(host="127.0.0.1", port=email_imap.port, ca_file=ca, **login), "INBOX", 1)
    try:
        assert by_its_name.poll(None, None).uidvalidity  # the same server, by the name its certificate carries
    finally:
        by_its_name.close()

    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = BOT, OWNER, "Not sent"
    message.set_content("not sent")
    smtps.clear()
    for server, security in ((smtps, "ssl"), (email_smtp, "starttls")):  # the module's CA is in no system store
        with pytest.raises(MailServerError) as untrusted:
            send(SmtpSettings(host="127.0.0.1", port=server.port, security=security), message)
        said = str(untrusted.value)
        assert said.startswith(f"SMTP 127.0.0.1:{server.port} ({security}): the server's certificate is not trusted")
        assert "set email.smtp.ca_file" in said and not untrusted.value.for_good
        assert not server.messages

    missing = str(tmp_path / "no-such-ca.pem")
    with pytest.raises(MailServerError) as unreadable:
        Mailbox(ImapSettings(host="127.0.0.1", port=email_imap.port, ca_file=missing, **login), "INBOX", 1).poll(
            None, None
        )
    assert str(unreadable.value).startswith(f"email.imap.ca_file {missing!r} cannot be read as CA certificates")


def test_the_mail_skill_sends_over_smtps_with_its_ca_file_and_names_it_for_an_untrusted_certificate(
    smtps, certs, tmp_path
):
    """The ``mail`` skill's SMTP (skills/mail/smtp.py) takes the same context and says the same sentence."""
    skill = load_skill_folder(Path(__file__).resolve().parent.parent / "skills" / "mail")
    workspace = Workspace(tmp_path / "ws")
    smtps.clear()
    args = {"action": "send", "to": "anna@example.org", "subject": "Saturday", "body": "I'll come."}

    def context(**trust: str) -> SkillContext:
        smtp = {"host": "127.0.0.1", "port": smtps.port, "security": "ssl", **trust}
        return SkillContext(
            conversation_id="tg:1", config={"mail": {"from": "Owner <owner@example.org>", "smtp": smtp}}
        )

    with pytest.raises(ValueError) as untrusted:
        skill.run(workspace, dict(args), context())
    assert "the mail could not be sent: the server's certificate is not trusted" in str(untrusted.value)
    assert "set mail.smtp.ca_file" in str(untrusted.value) and not smtps.messages
    assert skill.run(workspace, dict(args), context(ca_file=str(certs.ca))).startswith("sent to anna@example.org")
    [sent] = smtps.messages
    assert sent["Subject"] == "Saturday"
