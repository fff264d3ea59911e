"""The chat frontends' sections: ``telegram`` and ``signal``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from assistant_framework.config.settings.allowlist import Allowlist
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
    wholes,
)
from assistant_framework.config.settings.readers import (
    CLOCK_TIME,
    HTTP_URL,
    OPTIONAL_ENV_NAME,
    URL_OR_EMPTY,
    pattern,
    when_enabled,
)
from assistant_framework.json_types import JsonSchema

GROUP_MODES = ("mention", "all")
#: Telegram's alphabet for a webhook's secret token, long enough not to be guessed; empty: one is generated.
WEBHOOK_SECRET = pattern("^([A-Za-z0-9_-]{16,256})?$", "16–256 of A-Z a-z 0-9 _ -, or empty")
#: The bot's own Signal number.
OWN_NUMBER = pattern("^(|\\+[1-9][0-9]{6,14})$", "an E.164 number or empty")
#: The bot's own Matrix account.
OWN_MATRIX_USER = pattern("^(|@[^:\\s]+:[^\\s]+)$", "a Matrix user id or empty")
#: A phone number in E.164 form or a Signal ACI UUID.
SIGNAL_ID = pattern(
    "^(\\+[1-9][0-9]{6,14}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$",
    "an E.164 number or a Signal ACI UUID",
)
#: A Signal ACI UUID (signal-cli writes it in lower case).
SIGNAL_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
#: A Matrix user id: @localpart:server.
MATRIX_USER = pattern("^@[^:\\s]+:[^\\s]+$", "a Matrix user id")


@dataclass(frozen=True)
class WebhookSettings:
    """``telegram.webhook``: where the bot listens for Telegram's POSTs in ``mode: webhook``."""

    listen: str = field(default="127.0.0.1", metadata=reads(text))
    port: int = field(default=8443, metadata=reads(whole, minimum=1, maximum=65535))
    #: The public https:// address Telegram posts to (required in webhook mode).
    url: str = field(default="", metadata=reads(text))
    #: Empty: a strong one is generated into ``state/webhook_secret``.
    secret_token: str = field(default="", repr=False, metadata=reads(text, pattern=WEBHOOK_SECRET))


@dataclass(frozen=True)
class TelegramSettings:
    """The ``telegram`` section (docs/telegram.md)."""

    token: str = field(default="", repr=False, metadata=reads(text))
    allowed_user_ids: tuple[int, ...] = field(default=(), metadata=reads(wholes))
    #: null: the first of ``allowed_user_ids`` (``owner``).
    owner_id: int | None = field(default=None, metadata=reads(maybe(whole), null=True))
    #: null: the official Bot API.
    base_url: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=URL_OR_EMPTY))
    base_file_url: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=URL_OR_EMPTY))
    mode: str = field(default="polling", metadata=reads(one_of("polling", "webhook")))
    group_mode: str = field(default="mention", metadata=reads(one_of(*GROUP_MODES)))
    stream: bool = field(default=True, metadata=reads(flag))
    progress: bool = field(default=True, metadata=reads(flag))
    #: At most one edit of the growing answer per this many seconds (the platform's rate limit; lower only
    #: against a server of your own).
    edit_interval_seconds: float = field(default=1.0, metadata=reads(number, minimum=0.05))
    morning_digest: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=CLOCK_TIME))
    webhook: WebhookSettings = field(default_factory=WebhookSettings, metadata=nests(WebhookSettings))

    @property
    def owner(self) -> int | None:
        """The owner's user id: ``owner_id``, else the first allowed id, else None."""
        if self.owner_id is not None:
            return self.owner_id
        return self.allowed_user_ids[0] if self.allowed_user_ids else None


def signal_id(value: str) -> str:
    """A Signal id as signal-cli names a sender: a phone number as written (E.164), a UUID in lower case."""
    value = str(value).strip()
    return value.lower() if SIGNAL_UUID.match(value) else value


@dataclass(frozen=True)
class SignalSettings(Allowlist):
    """The ``signal`` section (docs/signal.md); ``allowed`` and ``owner`` hold numbers or account UUIDs."""

    enabled: bool = field(default=False, metadata=reads(flag))
    base_url: str = field(default="http://127.0.0.1:8080", metadata=reads(text, pattern=HTTP_URL))
    account: str = field(default="", metadata=reads(text, pattern=OWN_NUMBER))
    allowed: tuple[str, ...] = field(default=(), metadata=reads(strings, each={"pattern": SIGNAL_ID}))
    #: null: the first of ``allowed``.
    owner: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=SIGNAL_ID))
    group_mode: str = field(default="mention", metadata=reads(one_of(*GROUP_MODES)))
    typing: bool = field(default=True, metadata=reads(flag))
    morning_digest: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=CLOCK_TIME))

    def id_of(self, configured: str) -> str:
        return signal_id(configured)

    # The bot needs its own number to talk to the daemon and to notice mentions of itself.
    SCHEMA_RULES: ClassVar[JsonSchema] = when_enabled(
        {"required": ["account"], "properties": {"account": {"minLength": 2}}}
    )


@dataclass(frozen=True)
class MatrixSettings(Allowlist):
    """The ``matrix`` section (docs/matrix.md)."""

    enabled: bool = field(default=False, metadata=reads(flag))
    #: The homeserver's client-server address (``https://matrix.example.org``).
    homeserver: str = field(default="", metadata=reads(text, pattern=URL_OR_EMPTY))
    #: The bot's own account (``@assistant:example.org``).
    user_id: str = field(default="", metadata=reads(text, pattern=OWN_MATRIX_USER))
    password: str = field(default="", repr=False, metadata=reads(text))
    #: The name of an environment variable holding the password (instead of ``password``).
    password_env: str = field(default="", metadata=reads(text, pattern=OPTIONAL_ENV_NAME))
    #: An access token instead of a password (an existing device's).
    access_token: str = field(default="", repr=False, metadata=reads(text))
    access_token_env: str = field(default="", metadata=reads(text, pattern=OPTIONAL_ENV_NAME))
    #: The name of the bot's device (one device, kept across restarts).
    device_name: str = field(default="assistant", metadata=reads(text, min_length=1, max_length=100))
    allowed: tuple[str, ...] = field(default=(), metadata=reads(strings, each={"pattern": MATRIX_USER}))
    #: null: the first of ``allowed``.
    owner: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=MATRIX_USER))
    group_mode: str = field(default="mention", metadata=reads(one_of(*GROUP_MODES)))
    typing: bool = field(default=True, metadata=reads(flag))
    morning_digest: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=CLOCK_TIME))
    #: At most one edit of the growing answer per this many seconds (the platform's rate limit; lower only
    #: against a server of your own).
    edit_interval_seconds: float = field(default=1.0, metadata=reads(number, minimum=0.05))

    @property
    def homeserver_url(self) -> str:
        """``homeserver`` without a trailing slash: the client-server API's paths follow it."""
        return self.homeserver.rstrip("/")

    # The bot needs its server and its own account to log in.
    SCHEMA_RULES: ClassVar[JsonSchema] = when_enabled(
        {
            "required": ["homeserver", "user_id"],
            "properties": {"homeserver": {"minLength": 8}, "user_id": {"minLength": 3}},
        }
    )
