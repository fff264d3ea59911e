"""The ``slack`` section: the Slack channel on the Events API over HTTP or Socket Mode, and the Web API
(docs/slack.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from assistant_framework.config.settings.allowlist import Allowlist
from assistant_framework.config.settings.fields import flag, maybe, nests, number, reads, strings, text, whole
from assistant_framework.config.settings.readers import (
    HTTP_URL,
    OPTIONAL_ENV_NAME,
    pattern,
    when_enabled,
)
from assistant_framework.json_types import JsonSchema

#: A Slack user id as the allowlist takes it (``U024BE7LH``; enterprise grid ids start with W).
USER_ID = pattern("^[UW][A-Z0-9]{2,20}$", "a Slack user id (U024BE7LH)")
WEBHOOK_PATH = pattern("^/[A-Za-z0-9/._-]{0,100}$", "a path (/slack/events)")


@dataclass(frozen=True)
class SlackWebhookSettings:
    """``slack.webhook``: where the bot listens for the Events API's requests (behind your HTTPS proxy)."""

    listen: str = field(default="127.0.0.1", metadata=reads(text, min_length=1))
    #: 0: any free port (said in the log).
    port: int = field(default=8091, metadata=reads(whole, minimum=0, maximum=65535))
    path: str = field(default="/slack/events", metadata=reads(text, pattern=WEBHOOK_PATH))
    #: A POST with a larger body is refused (413) before it is read.
    max_body_bytes: int = field(default=1_000_000, metadata=reads(whole, minimum=10_000, maximum=10_000_000))
    #: POSTs a minute taken; more are answered 429 (Slack sends them again later).
    per_minute: int = field(default=600, metadata=reads(whole, minimum=1, maximum=100_000))


@dataclass(frozen=True)
class SlackSettings(Allowlist):
    """The ``slack`` section."""

    enabled: bool = field(default=False, metadata=reads(flag))
    #: The bot user's OAuth token (``xoxb-...``).
    bot_token: str = field(default="", repr=False, metadata=reads(text))
    #: The name of an environment variable holding the bot token (instead of ``bot_token``).
    bot_token_env: str = field(default="", metadata=reads(text, pattern=OPTIONAL_ENV_NAME))
    #: The name of the environment variable holding the app's signing secret (every request is checked with it).
    signing_secret_env: str = field(default="", metadata=reads(text, pattern=OPTIONAL_ENV_NAME))
    #: Take the events over Socket Mode (a websocket the bot opens; no request URL) instead of the Events API.
    socket_mode: bool = field(default=False, metadata=reads(flag))
    #: The name of the environment variable holding the app-level token (``xapp-...``) Socket Mode connects with.
    app_token_env: str = field(default="", metadata=reads(text, pattern=OPTIONAL_ENV_NAME))
    #: Slack user ids answered; empty: no one.
    allowed: tuple[str, ...] = field(
        default=(), metadata=reads(strings, each={"pattern": USER_ID}, schema={"maxItems": 100})
    )
    #: null: the first of ``allowed``.
    owner: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=USER_ID))
    webhook: SlackWebhookSettings = field(default_factory=SlackWebhookSettings, metadata=nests(SlackWebhookSettings))
    #: The Web API (a proxy or a test server in its place).
    base_url: str = field(default="https://slack.com/api/", metadata=reads(text, pattern=HTTP_URL))
    #: Show the answer growing in one message (``chat.update``) while the model writes.
    stream: bool = field(default=True, metadata=reads(flag))
    #: At most one edit of the growing answer per this many seconds (the platform's rate limit; lower only
    #: against a server of your own).
    edit_interval_seconds: float = field(default=1.0, metadata=reads(number, minimum=0.05))

    # Over Socket Mode the channel needs the app-level token; over the Events API the signing secret, to check
    # every request Slack sends.
    SCHEMA_RULES: ClassVar[JsonSchema] = when_enabled(
        {
            "if": {"properties": {"socket_mode": {"const": True}}, "required": ["socket_mode"]},
            "then": {"required": ["app_token_env"], "properties": {"app_token_env": {"minLength": 1}}},
            "else": {"required": ["signing_secret_env"], "properties": {"signing_secret_env": {"minLength": 1}}},
        }
    )
