"""What doctor and setup ask Discord's REST API with the bot token: is it valid (``GET /users/@me``: the bot's
name), and may the application read messages (``GET /oauth2/applications/@me``: its message content intent);
and who writes to the bot in a DM (the gateway: Discord gives a bot its DMs only there), the owner's id for setup."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx

from assistant_framework.tls import shared_context
from messaging_llm_bot.ops.channels.setup import FirstSender, SetupError

if TYPE_CHECKING:
    import discord

TIMEOUT_SECONDS = 10
#: The application's flags that say the message content intent is on (GATEWAY_MESSAGE_CONTENT and its
#: _LIMITED form for bots in fewer than 100 servers).
MESSAGE_CONTENT_FLAGS = (1 << 18) | (1 << 19)


@dataclass(frozen=True)
class DiscordReached:
    """The bot the token is, whether its application has the message content intent, or why not (``problem``)."""

    bot: str = ""
    message_content: bool = False
    problem: str = ""


def probe_token(base_url: str, token: str) -> DiscordReached:
    headers = {"Authorization": f"Bot {token}", "User-Agent": "DiscordBot (assistant-framework, 1)"}
    try:
        with httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=TIMEOUT_SECONDS, verify=shared_context()
        ) as client:
            me = client.get("/users/@me")
            if me.status_code == 401:
                return DiscordReached(problem="Discord refused the token (401 Unauthorized)")
            if me.status_code != 200:
                return DiscordReached(problem=f"Discord answered {me.status_code} to the token's check")
            app = client.get("/oauth2/applications/@me")
    except httpx.HTTPError as err:
        return DiscordReached(problem=f"Discord cannot be reached: {type(err).__name__}")
    name = str(me.json().get("username") or "?")
    flags = app.json().get("flags", 0) if app.status_code == 200 else 0
    return DiscordReached(bot=name, message_content=bool(int(flags or 0) & MESSAGE_CONTENT_FLAGS))


def dm_senders(base_url: str, token: str, seconds: float) -> list[FirstSender]:
    """Who wrote to the bot in a DM while the gateway was open, for at most ``seconds`` (until the first message):
    a message sent before it opened does not count. A closed gateway (no message content intent) is a SetupError."""
    return asyncio.run(_dm_senders(base_url, token, seconds))


async def _dm_senders(base_url: str, token: str, seconds: float) -> list[FirstSender]:
    from messaging_llm_bot.channels.discord.gateway import log_in, make_client

    found: list[FirstSender] = []
    came = asyncio.Event()

    async def on_message(message: discord.Message) -> None:
        import discord

        if isinstance(message.channel, discord.DMChannel) and not message.author.bot:
            found.append(FirstSender(str(message.author.id), message.author.display_name, message.content))
            came.set()

    client = make_client(base_url, on_message)
    try:
        await log_in(client, token)
        connection = asyncio.create_task(client.connect(reconnect=False))
        first = asyncio.create_task(came.wait())
        await asyncio.wait((connection, first), timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        first.cancel()
        if connection.done() and connection.exception() is not None:
            raise SetupError(f"Discord: the gateway closed: {connection.exception()}")
    finally:
        with contextlib.suppress(Exception):
            await client.close()
    return found
