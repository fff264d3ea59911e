"""discord.py's client, pointed at the configured REST API and the gateway it names, and logged in.

The seams are discord.py's own: ``discord.http.Route.BASE`` (every REST call's base) and
``DiscordWebSocket.DEFAULT_GATEWAY`` (where a client connects; set from what ``GET /gateway/bot`` answers, as
Discord asks bots to). Intents: the defaults and message content (privileged: the application must have it on in
the Developer Portal, else the gateway closes with 4014 and the channel says how to turn it on).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from messaging_llm_bot.channels.discord.api import MAX_RATELIMIT_SECONDS

if TYPE_CHECKING:
    import discord

INTENTS_HELP = (
    "Discord refused the message content intent: turn on 'Message Content Intent' on your application's Bot "
    "page (discord.com/developers/applications), then start again"
)


def make_client(base_url: str, on_message: Callable[[discord.Message], Awaitable[object]]) -> discord.Client:
    """A client whose REST calls go to ``base_url``; ``on_message`` gets every message the gateway delivers."""
    import discord

    discord.http.Route.BASE = base_url
    discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False  # no voice: no warning about it
    intents = discord.Intents.default()
    intents.message_content = True
    client = discord.Client(
        intents=intents,
        max_messages=None,  # the inbox keeps what matters; no cache of messages
        allowed_mentions=discord.AllowedMentions.none(),  # a reply pings no one
        max_ratelimit_timeout=MAX_RATELIMIT_SECONDS,
    )

    async def message_event(message: discord.Message) -> None:
        await on_message(message)

    client.on_message = message_event  # type: ignore[attr-defined]
    return client


async def log_in(client: discord.Client, token: str) -> None:
    """Log in (``GET /users/@me``, raises ``discord.LoginFailure`` for a wrong token) and take the gateway's
    address from ``GET /gateway/bot``."""
    import yarl
    from discord.gateway import DiscordWebSocket

    await client.login(token)
    _shards, url, _limit = await client.http.get_bot_gateway()
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
