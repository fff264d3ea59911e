"""The email channel's part of ``assistant setup`` (``--email ADDRESS``, docs/email.md; channels/setup.py):
the assistant's own address, its IMAP and SMTP servers, the login (a password is never written: the name of an
environment variable holding it), and whose mail it answers. The IMAP login is tried when the password is
there; the settings are written with ``email.enabled`` last (the config refuses an enabled channel without its
servers)."""

from __future__ import annotations

import os
import re

from messaging_llm_bot.channels.setup import ChannelSetup, Flags, SetupError, Steps

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


def add_arguments(parser: Flags) -> None:
    parser.add_argument(
        "--email",
        dest="email_address",
        metavar="ADDRESS",
        help="the assistant's own email address (the email channel; docs/email.md)",
    )
    parser.add_argument("--email-imap", metavar="HOST[:PORT]", help="its IMAP server (default imap.<domain>)")
    parser.add_argument("--email-smtp", metavar="HOST[:PORT]", help="its SMTP server (default smtp.<domain>)")
    parser.add_argument("--email-security", choices=("ssl", "starttls", "none"), help="TLS for both (default ssl)")
    parser.add_argument("--email-user", help="the login (default the address)")
    parser.add_argument("--email-password-env", metavar="NAME", help="the environment variable holding the password")
    parser.add_argument("--email-owner", metavar="ADDRESS", help="your own address: whose mail it answers")


def steps(setup: ChannelSetup) -> None:
    if EmailSteps(setup).email():
        setup.reached.append("email")


class EmailSteps(Steps):
    def email(self) -> bool:
        """Set up the email channel when ``--email ADDRESS`` is given (the rest is asked, or taken from the
        flags); True when it was set up. Without the flag the first run asks nothing about email."""
        a = self.a
        address = a.email_address
        if not address:
            return False
        if not ADDRESS.fullmatch(address):
            raise SetupError(f"{address!r} is not an email address (assistant@example.org)")
        domain = address.rpartition("@")[2]
        security = a.email_security or "ssl"
        if security not in PORTS:
            raise SetupError(f"--email-security {security!r}: ssl, starttls or none")
        imap_port, smtp_port = PORTS[security]
        imap = _server(a.email_imap or self._ask("Its IMAP server (host or host:port)", f"imap.{domain}"), imap_port)
        smtp = _server(a.email_smtp or self._ask("Its SMTP server (host or host:port)", f"smtp.{domain}"), smtp_port)
        user = a.email_user if a.email_user is not None else self._ask("Its login", address)
        env = a.email_password_env or self._ask("The environment variable holding its password", PASSWORD_ENV)
        owner = a.email_owner or self._ask("Your own address (whose mail it answers)")
        if not ADDRESS.fullmatch(owner or ""):
            raise SetupError(f"{owner!r} is not an email address: the assistant answers only the owner's mail")
        server = {"security": security, "user": user, "password_env": env}
        self.settings += [
            ("email.address", address),
            ("email.imap", {"host": imap[0], "port": imap[1], **server}),
            ("email.smtp", {"host": smtp[0], "port": smtp[1], **server}),
            ("email.allowed", [owner.lower()]),
            ("email.enabled", True),
        ]
        self._try_login(imap, security, user, env)
        self.io.say(
            f"Email: {address} answers mail from {owner} that your provider's Authentication-Results proves "
            "(docs/email.md)."
        )
        return True

    def _try_login(self, imap: tuple[str, int], security: str, user: str, env: str) -> None:
        from assistant_framework.config.settings.email import ImapSettings
        from messaging_llm_bot.channels.email.servers import Mailbox, MailServerError

        if not os.environ.get(env):
            self.io.say(f"Email: set {env} to the password before `make run`; `make doctor` then logs in.")
            return
        mailbox = Mailbox(
            ImapSettings(host=imap[0], port=imap[1], security=security, user=user, password_env=env), "INBOX", 1
        )
        try:
            mailbox.connect()
            self.io.say(f"Email: {mailbox.where} takes the login.")
        except MailServerError as err:
            raise SetupError(f"{err}; check the server and the password in {env}") from None
        finally:
            mailbox.close()
