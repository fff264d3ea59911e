"""The chat frontends' sections: ``telegram`` and ``signal``."""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import flag, maybe, nests, one_of, reads, strings, text, whole, wholes

GROUP_MODES = ("mention", "all")


@dataclass(frozen=True)
class WebhookSettings:
    """``telegram.webhook``: where the bot listens for Telegram's POSTs in ``mode: webhook``."""

    listen: str = field(default="127.0.0.1", metadata=reads(text))
    port: int = field(default=8443, metadata=reads(whole))
    #: The public https:// address Telegram posts to (required in webhook mode).
    url: str = field(default="", metadata=reads(text))
    #: Empty: a strong one is generated into ``state/webhook_secret``.
    secret_token: str = field(default="", repr=False, metadata=reads(text))


@dataclass(frozen=True)
class TelegramSettings:
    """The ``telegram`` section (docs/telegram.md)."""

    token: str = field(default="", repr=False, metadata=reads(text))
    allowed_user_ids: tuple[int, ...] = field(default=(), metadata=reads(wholes))
    #: null: the first of ``allowed_user_ids`` (``owner``).
    owner_id: int | None = field(default=None, metadata=reads(maybe(whole), null=True))
    #: null: the official Bot API.
    base_url: str | None = field(default=None, metadata=reads(maybe(text), null=True))
    base_file_url: str | None = field(default=None, metadata=reads(maybe(text), null=True))
    mode: str = field(default="polling", metadata=reads(one_of("polling", "webhook")))
    group_mode: str = field(default="mention", metadata=reads(one_of(*GROUP_MODES)))
    stream: bool = field(default=True, metadata=reads(flag))
    progress: bool = field(default=True, metadata=reads(flag))
    morning_digest: str | None = field(default=None, metadata=reads(maybe(text), null=True))
    webhook: WebhookSettings = field(default_factory=WebhookSettings, metadata=nests(WebhookSettings))

    @property
    def owner(self) -> int | None:
        """The owner's user id: ``owner_id``, else the first allowed id, else None."""
        if self.owner_id is not None:
            return self.owner_id
        return self.allowed_user_ids[0] if self.allowed_user_ids else None


@dataclass(frozen=True)
class SignalSettings:
    """The ``signal`` section (docs/signal.md)."""

    enabled: bool = field(default=False, metadata=reads(flag))
    base_url: str = field(default="http://127.0.0.1:8080", metadata=reads(text))
    account: str = field(default="", metadata=reads(text))
    allowed: tuple[str, ...] = field(default=(), metadata=reads(strings))
    #: null: the first of ``allowed``.
    owner: str | None = field(default=None, metadata=reads(maybe(text), null=True))
    group_mode: str = field(default="mention", metadata=reads(one_of(*GROUP_MODES)))
    typing: bool = field(default=True, metadata=reads(flag))
    morning_digest: str | None = field(default=None, metadata=reads(maybe(text), null=True))


@dataclass(frozen=True)
class MatrixSettings:
    """The ``matrix`` section (docs/matrix.md)."""

    enabled: bool = field(default=False, metadata=reads(flag))
    #: The homeserver's client-server address (``https://matrix.example.org``).
    homeserver: str = field(default="", metadata=reads(text))
    #: The bot's own account (``@assistant:example.org``).
    user_id: str = field(default="", metadata=reads(text))
    password: str = field(default="", repr=False, metadata=reads(text))
    #: The name of an environment variable holding the password (instead of ``password``).
    password_env: str = field(default="", metadata=reads(text))
    #: An access token instead of a password (an existing device's).
    access_token: str = field(default="", repr=False, metadata=reads(text))
    access_token_env: str = field(default="", metadata=reads(text))
    #: The name of the bot's device (one device, kept across restarts).
    device_name: str = field(default="assistant", metadata=reads(text))
    allowed: tuple[str, ...] = field(default=(), metadata=reads(strings))
    #: null: the first of ``allowed``.
    owner: str | None = field(default=None, metadata=reads(maybe(text), null=True))
    group_mode: str = field(default="mention", metadata=reads(one_of(*GROUP_MODES)))
    typing: bool = field(default=True, metadata=reads(flag))
    morning_digest: str | None = field(default=None, metadata=reads(maybe(text), null=True))
