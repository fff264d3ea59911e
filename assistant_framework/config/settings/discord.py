"""The ``discord`` section: the Discord channel on the gateway and the REST API through discord.py
(docs/discord.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.config.settings.allowlist import Allowlist
from assistant_framework.config.settings.fields import flag, maybe, number, reads, strings, text
from assistant_framework.config.settings.readers import HTTP_URL, OPTIONAL_ENV_NAME, pattern

#: A Discord user id (a snowflake: 17 to 20 digits) as the allowlist takes it.
USER_ID = pattern("^[0-9]{17,20}$", "a Discord user id (80351110224678912)")


@dataclass(frozen=True)
class DiscordSettings(Allowlist):
    """The ``discord`` section."""

    enabled: bool = field(default=False, metadata=reads(flag))
    #: The bot's token (the Developer Portal's Bot page).
    bot_token: str = field(default="", repr=False, metadata=reads(text))
    #: The name of an environment variable holding the bot token (instead of ``bot_token``).
    bot_token_env: str = field(default="", metadata=reads(text, pattern=OPTIONAL_ENV_NAME))
    #: Discord user ids answered; empty: no one.
    allowed: tuple[str, ...] = field(
        default=(), metadata=reads(strings, each={"pattern": USER_ID}, schema={"maxItems": 100})
    )
    #: null: the first of ``allowed``.
    owner: str | None = field(default=None, metadata=reads(maybe(text), null=True, pattern=USER_ID))
    #: The REST API (a proxy or a test server in its place); the gateway's address is what its /gateway/bot says.
    base_url: str = field(default="https://discord.com/api/v10", metadata=reads(text, pattern=HTTP_URL))
    #: Show the answer growing in one message (edits) while the model writes.
    stream: bool = field(default=True, metadata=reads(flag))
    #: At most one edit of the growing answer per this many seconds (the platform's rate limit; lower only
    #: against a server of your own).
    edit_interval_seconds: float = field(default=1.0, metadata=reads(number, minimum=0.05))
