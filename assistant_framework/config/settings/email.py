"""The ``email`` section: the email channel (docs/email.md), a mailbox the assistant reads and answers from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from assistant_framework.config.settings.fields import (
    flag,
    maybe,
    nests,
    number,
    one_of,
    reads,
    strings,
    text,
    whole,
)
from assistant_framework.config.settings.mail import SECURITY, SmtpSettings
from assistant_framework.config.settings.readers import pattern, when_enabled
from assistant_framework.json_types import JsonSchema

#: ``auth-results``: a mail counts as an allowed sender's only when the receiving server's
#: Authentication-Results says dkim or spf pass for the From address; ``any``: the From header alone (forgeable).
TRUST = ("auth-results", "any")
#: An email address as the allowlist takes it (``anna@example.org``).
ADDRESS = pattern("^[^@\\s<>]+@[^@\\s<>]+$", "an email address")
ADDRESS_OR_EMPTY = pattern("^$|" + ADDRESS, "an email address or empty")


@dataclass(frozen=True)
class ImapSettings:
    """``email.imap``: where mail comes in."""

    host: str = field(default="", metadata=reads(text))
    port: int = field(default=993, metadata=reads(whole, minimum=1, maximum=65535))
    #: ``ssl``: TLS from the first byte (993); ``starttls``: plain, then STARTTLS (143); ``none``: loopback only.
    security: str = field(default="ssl", metadata=reads(one_of(*SECURITY)))
    user: str = field(default="", metadata=reads(text))
    password: str = field(default="", repr=False, metadata=reads(text))
    password_env: str = field(default="", metadata=reads(text))
    timeout_seconds: float = field(default=30.0, metadata=reads(number, above=0, maximum=120))
    #: A private CA's certificate (a PEM file) trusted for this server in place of the system's store.
    ca_file: str = field(default="", metadata=reads(text))


@dataclass(frozen=True)
class EmailSettings:
    """The ``email`` section."""

    enabled: bool = field(default=False, metadata=reads(flag))
    #: The assistant's own address: its replies come from it, mail from it is never answered.
    address: str = field(default="", metadata=reads(text, pattern=ADDRESS_OR_EMPTY))
    imap: ImapSettings = field(default_factory=ImapSettings, metadata=nests(ImapSettings))
    smtp: SmtpSettings = field(default_factory=SmtpSettings, metadata=nests(SmtpSettings))
    allowed: tuple[str, ...] = field(
        default=(), metadata=reads(strings, each={"pattern": ADDRESS}, schema={"maxItems": 100})
    )
    #: null: the first of ``allowed``.
    owner: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=ADDRESS))
    folder: str = field(default="INBOX", metadata=reads(text, min_length=1))
    poll_seconds: float = field(default=60.0, metadata=reads(number, minimum=0.1, maximum=3600))
    trust: str = field(default="auth-results", metadata=reads(one_of(*TRUST)))
    #: The authserv-id of your provider's Authentication-Results (``mx.example.org``); empty: the topmost header.
    authserv_id: str = field(default="", metadata=reads(text))
    #: A mail larger than this is not fetched (it is logged and skipped).
    max_mail_bytes: int = field(default=10_000_000, metadata=reads(whole, minimum=10_000, maximum=50_000_000))

    # The channel needs its own address (its replies come from it) and both servers.
    SCHEMA_RULES: ClassVar[JsonSchema] = when_enabled(
        {
            "required": ["address", "imap", "smtp"],
            "properties": {
                "address": {"minLength": 3},
                "imap": {"required": ["host"], "properties": {"host": {"minLength": 1}}},
                "smtp": {"required": ["host"], "properties": {"host": {"minLength": 1}}},
            },
        }
    )

    @property
    def owner_address(self) -> str | None:
        """The owner's address, lower case: ``owner``, else the first allowed, else None."""
        chosen = self.owner or (self.allowed[0] if self.allowed else None)
        return chosen.strip().lower() if chosen else None
