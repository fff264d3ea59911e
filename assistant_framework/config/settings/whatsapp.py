"""The ``whatsapp`` section: the WhatsApp channel on Meta's official Cloud API (docs/whatsapp.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from assistant_framework.config.settings.allowlist import Allowlist
from assistant_framework.config.settings.fields import flag, maybe, nests, reads, strings, text, whole
from assistant_framework.config.settings.readers import (
    CLOCK_TIME,
    HTTP_URL,
    OPTIONAL_ENV_NAME,
    pattern,
    when_enabled,
)
from assistant_framework.json_types import JsonSchema

#: A number as the allowlist takes it: E.164 (``+491701234567``).
E164 = pattern("^\\+[1-9][0-9]{6,14}$", "an E.164 number (+491701234567)")
DIGITS = pattern("^[0-9]*$", "digits")
WEBHOOK_PATH = pattern("^/[A-Za-z0-9/_-]{0,100}$", "a path (/whatsapp)")
TEMPLATE_NAME = pattern("^[a-z0-9_]{0,512}$", "a template name (lower case, digits, _) or empty")
LANGUAGE = pattern("^[a-z]{2,3}(_[A-Za-z]{2,4})?$", "a language code (en_US)")


def wa_id(number: str) -> str:
    """``+49 170 1234567`` or ``491701234567`` as WhatsApp's id of it (``wa_id``): the digits alone."""
    return "".join(ch for ch in number if ch.isdigit())


@dataclass(frozen=True)
class WhatsAppWebhookSettings:
    """``whatsapp.webhook``: where the bot listens for Meta's webhook (behind your HTTPS proxy)."""

    listen: str = field(default="127.0.0.1", metadata=reads(text, min_length=1))
    #: 0: any free port (said in the log).
    port: int = field(default=8090, metadata=reads(whole, minimum=0, maximum=65535))
    path: str = field(default="/whatsapp", metadata=reads(text, pattern=WEBHOOK_PATH))
    #: A POST with a larger body is refused (413) before it is read.
    max_body_bytes: int = field(default=1_000_000, metadata=reads(whole, minimum=10_000, maximum=10_000_000))
    #: POSTs a minute taken; more are answered 429 (Meta sends them again later).
    per_minute: int = field(default=600, metadata=reads(whole, minimum=1, maximum=100_000))


@dataclass(frozen=True)
class WhatsAppTemplateSettings:
    """``whatsapp.template``: the approved template a message outside the 24-hour window goes out as."""

    #: The template's name as approved in WhatsApp Manager; empty: such messages wait for the owner's next message.
    name: str = field(default="", metadata=reads(text, pattern=TEMPLATE_NAME))
    language: str = field(default="en_US", metadata=reads(text, pattern=LANGUAGE))


@dataclass(frozen=True)
class WhatsAppSettings(Allowlist):
    """The ``whatsapp`` section."""

    enabled: bool = field(default=False, metadata=reads(flag))
    #: The business phone number's id (WhatsApp Manager, API Setup): not the number itself.
    phone_number_id: str = field(default="", metadata=reads(text, pattern=DIGITS, max_length=32))
    access_token: str = field(default="", repr=False, metadata=reads(text))
    #: The name of an environment variable holding the access token (instead of ``access_token``).
    access_token_env: str = field(default="", metadata=reads(text, pattern=OPTIONAL_ENV_NAME))
    #: The name of the environment variable holding the app secret (every webhook POST is signed with it).
    app_secret_env: str = field(default="", metadata=reads(text, pattern=OPTIONAL_ENV_NAME))
    #: What you type as the verify token in the webhook's setup; the handshake answers only with it.
    verify_token: str = field(default="", repr=False, metadata=reads(text, max_length=200))
    #: E.164 numbers (``+491701234567``) answered; empty: no one.
    allowed: tuple[str, ...] = field(
        default=(), metadata=reads(strings, each={"pattern": E164}, schema={"maxItems": 100})
    )
    #: null: the first of ``allowed``.
    owner: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=E164))
    webhook: WhatsAppWebhookSettings = field(
        default_factory=WhatsAppWebhookSettings, metadata=nests(WhatsAppWebhookSettings)
    )
    #: The Graph API (a proxy or a test server in its place).
    base_url: str = field(default="https://graph.facebook.com/v21.0", metadata=reads(text, pattern=HTTP_URL))
    template: WhatsAppTemplateSettings = field(
        default_factory=WhatsAppTemplateSettings, metadata=nests(WhatsAppTemplateSettings)
    )
    #: Mark each message read and show "typing..." while the answer is written.
    typing: bool = field(default=True, metadata=reads(flag))
    morning_digest: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=CLOCK_TIME))

    def id_of(self, configured: str) -> str:
        """A configured number as Meta names a message's sender: its ``wa_id`` (the digits)."""
        return wa_id(configured)

    # The channel needs its number's id, the app secret to check signatures and a verify token for the handshake.
    SCHEMA_RULES: ClassVar[JsonSchema] = when_enabled(
        {
            "required": ["phone_number_id", "app_secret_env", "verify_token"],
            "properties": {
                "phone_number_id": {"minLength": 1},
                "app_secret_env": {"minLength": 1},
                "verify_token": {"minLength": 8},
            },
        }
    )
