"""The ``mail`` section: the sender and the SMTP server the ``mail`` skill sends through (docs/actions.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import nests, number, one_of, reads, text, whole

SECURITY = ("ssl", "starttls", "none")


@dataclass(frozen=True)
class SmtpSettings:
    """``mail.smtp``: where mail goes out. Empty ``host``: the skill says mail is not set up."""

    host: str = field(default="", metadata=reads(text))
    port: int = field(default=465, metadata=reads(whole, minimum=1, maximum=65535))
    #: ``ssl``: TLS from the first byte (465); ``starttls``: plain, then STARTTLS (587); ``none``: no TLS.
    security: str = field(default="ssl", metadata=reads(one_of(*SECURITY)))
    user: str = field(default="", metadata=reads(text))
    password: str = field(default="", repr=False, metadata=reads(text))
    #: The name of an environment variable holding the password (instead of ``password``).
    password_env: str = field(default="", metadata=reads(text))
    timeout_seconds: float = field(default=30.0, metadata=reads(number, above=0, maximum=120))
    #: A private CA's certificate (a PEM file) trusted for this server in place of the system's store.
    ca_file: str = field(default="", metadata=reads(text))


@dataclass(frozen=True)
class MailSettings:
    """The ``mail`` section."""

    #: The sender, ``Anna Owner <anna@example.org>`` (the key is ``from``).
    sender: str = field(default="", metadata=reads(text, key="from"))
    smtp: SmtpSettings = field(default_factory=SmtpSettings, metadata=nests(SmtpSettings))
    #: Recipients (To and Cc together) one mail may have.
    max_recipients: int = field(default=10, metadata=reads(whole, minimum=1, maximum=50))
