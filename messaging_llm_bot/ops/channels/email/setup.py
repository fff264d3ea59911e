"""The email channel's part of ``assistant setup`` (``--email ADDRESS``, docs/email.md; ops/channels/setup.py):
the assistant's own address, its IMAP and SMTP servers, the login (a password is never written: the name of an
environment variable holding it), and whose mail it answers. The IMAP login is tried when the password is
there; the settings are written with ``email.enabled`` last (the config refuses an enabled channel without its
servers)."""

from __future__ import annotations

import re

from messaging_llm_bot.ops.channels.setup import Flags, Form, OptInSteps, SetupError, Tried

ADDRESS = re.compile(r"[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+")
PORTS = {"ssl": (993, 465), "starttls": (143, 587), "none": (143, 25)}
PASSWORD_ENV = "ASSISTANT_MAIL_PASSWORD"


def _server(text: str, default_port: int) -> tuple[str, int]:
    """``host`` or ``host:port``; SetupError naming the answer when the port is no number."""
    host, sep, port = text.strip().rpartition(":") if ":" in text else (text.strip(), "", "")
    if not sep:
        return host, default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise SetupError(f"{text!r}: the port after the colon must be a number from 1 to 65535")
    return host, int(port)


class EmailSteps(OptInSteps):
    label, section, account, reached_as = "Email", "email", "email_address", "email"
    form = Form(ADDRESS, "is not an email address (assistant@example.org)")

    def set_up(self, account: str) -> None:
        a = self.a
        domain = account.rpartition("@")[2]
        security = a.email_security or "ssl"
        if security not in PORTS:
            raise SetupError(f"--email-security {security!r}: ssl, starttls or none")
        imap_port, smtp_port = PORTS[security]
        imap = _server(a.email_imap or self._ask("Its IMAP server (host or host:port)", f"imap.{domain}"), imap_port)
        smtp = _server(a.email_smtp or self._ask("Its SMTP server (host or host:port)", f"smtp.{domain}"), smtp_port)
        user = a.email_user if a.email_user is not None else self._ask("Its login", account)
        env = a.email_password_env or self._ask("The environment variable holding its password", PASSWORD_ENV)
        owner = a.email_owner or self._ask("Your own address (whose mail it answers)")
        Form(ADDRESS, "is not an email address: the assistant answers only the owner's mail").checked(owner)
        server = {"security": security, "user": user, "password_env": env}
        self.enable(
            {
                "address": account,
                "imap": {"host": imap[0], "port": imap[1], **server},
                "smtp": {"host": smtp[0], "port": smtp[1], **server},
                "allowed": [owner.lower()],
            }
        )
        self.try_secret(
            env,
            "the password",
            lambda _: _login(imap, security, user, env),
            "the server and the password",
            "then logs in",
        )
        self.io.say(
            f"Email: {account} answers mail from {owner} that your provider's Authentication-Results proves "
            "(docs/email.md)."
        )


def _login(imap: tuple[str, int], security: str, user: str, env: str) -> Tried:
    """The IMAP login, with the password in ``env``."""
    from assistant_framework.config.settings.email import ImapSettings
    from messaging_llm_bot.channels.email.servers import Mailbox, MailServerError

    mailbox = Mailbox(
        ImapSettings(host=imap[0], port=imap[1], security=security, user=user, password_env=env), "INBOX", 1
    )
    try:
        mailbox.connect()
        return Tried((f"{mailbox.where} takes the login.",))
    except MailServerError as err:
        return Tried(problem=str(err))
    finally:
        mailbox.close()


def add_arguments(parser: Flags) -> None:
    EmailSteps.add_account(
        parser, "--email", "ADDRESS", "the assistant's own email address (the email channel; docs/email.md)"
    )
    parser.add_argument("--email-imap", metavar="HOST[:PORT]", help="its IMAP server (default imap.<domain>)")
    parser.add_argument("--email-smtp", metavar="HOST[:PORT]", help="its SMTP server (default smtp.<domain>)")
    parser.add_argument("--email-security", choices=("ssl", "starttls", "none"), help="TLS for both (default ssl)")
    parser.add_argument("--email-user", help="the login (default the address)")
    parser.add_argument("--email-password-env", metavar="NAME", help="the environment variable holding the password")
    parser.add_argument("--email-owner", metavar="ADDRESS", help="your own address: whose mail it answers")


steps = EmailSteps.steps
