"""The REST calls the channel makes, through discord.py's client (its rate limits honoured: a 429 is waited out
and tried again by the library, within ``MAX_RATELIMIT_SECONDS``), with Discord's errors as the contract's.

``DiscordUnavailable`` when trying again later can help (no connection, HTTP 5xx, a rate limit longer than the
library waits, a token the owner can fix), else ``DeliveryError`` for good (an unknown channel or message,
missing access, a message Discord refuses). The token is never in an error's text.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

from messaging_llm_bot.channels.contract import DeliveryError

if TYPE_CHECKING:
    import discord

T = TypeVar("T")
#: A rate limit up to this long is waited out inside the call; a longer one is the caller's to wait (the reply
#: stays in the inbox meanwhile).
MAX_RATELIMIT_SECONDS = 30.0


class DiscordUnavailable(Exception):
    """The REST API cannot take the call now; ``retry_after`` seconds (Discord's) or 0."""

    def __init__(self, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


async def call(what: str, pending: Awaitable[T]) -> T:
    """``pending``'s result, or its failure as ``DiscordUnavailable`` / ``DeliveryError``."""
    import aiohttp
    import discord

    try:
        return await pending
    except discord.RateLimited as err:
        raise DiscordUnavailable(f"{what}: rate limited", min(err.retry_after, 300.0)) from None
    except discord.HTTPException as err:
        text = f"{what}: HTTP {err.status} (code {err.code}: {err.text[:200]})"
        if err.status in (401, 429) or err.status >= 500:
            raise DiscordUnavailable(text) from None
        raise DeliveryError(text, for_good=True) from None
    except (TimeoutError, aiohttp.ClientError, OSError) as err:
        raise DiscordUnavailable(f"{what}: Discord cannot be reached: {type(err).__name__}") from None


def messageable(client: discord.Client, channel: str) -> discord.PartialMessageable:
    """A channel to send to by its id alone (no cache needed)."""
    return client.get_partial_messageable(int(channel))
