"""A Discord message's attachments for the turn: each fetched from its URL (Discord's CDN, or the configured API's
own host: a message naming another host gets nothing fetched), at most ``MAX_FILE_BYTES`` counted while read, saved
in the chat's area like the other channels' attachments (conversation/media_in.py's ``files_saver``), and read for
the model by conversation/images.py's ``files_input``: pictures to a runner that sees them, documents to text,
every file named as outside content. A file that cannot be fetched is named to the model with the reason (or
answered with it, when it is the only one)."""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

import httpx

from assistant_framework.config.settings import Settings
from assistant_framework.tls import shared_context
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.discord.api import DiscordUnavailable
from messaging_llm_bot.channels.discord.format import MAX_FILE_BYTES
from messaging_llm_bot.channels.discord.message import DiscordMessage
from messaging_llm_bot.conversation.media_in import files_saver, read_within, shared_file
from messaging_llm_bot.conversation.turn import SaveFiles

#: Where Discord serves attachments (its CDN and media proxy).
CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})
TIMEOUT_SECONDS = 60


def fetchable(url: str, base_url: str) -> bool:
    """Only Discord's CDN over https, or the configured REST API's own scheme, host and port (a proxy or a test
    server): an attachment URL elsewhere is never asked."""
    got, api = urlsplit(url), urlsplit(base_url)
    if got.scheme == "https" and got.hostname in CDN_HOSTS:
        return True
    return (got.scheme, got.netloc) == (api.scheme, api.netloc)


async def download(url: str, base_url: str, limit: int) -> bytes:
    """The attachment's bytes; ``DeliveryError`` for a host it may not fetch or a file over ``limit``,
    ``DiscordUnavailable`` when it cannot be fetched now."""
    if not fetchable(url, base_url):
        raise DeliveryError("the attachment is not on Discord's file host", for_good=True)
    try:
        async with (
            httpx.AsyncClient(timeout=TIMEOUT_SECONDS, verify=shared_context()) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code != 200:
                raise DiscordUnavailable(f"Discord's file host answered {response.status_code}")
            data = await read_within(response.aiter_bytes(), limit)
    except httpx.HTTPError as err:
        raise DiscordUnavailable(f"Discord's file host cannot be reached: {type(err).__name__}") from None
    if data is None:
        raise DeliveryError(f"the file is larger than {limit // 2**20} MB", for_good=True)
    return data


def save_files(base_url: str, msg: DiscordMessage, settings: Settings) -> SaveFiles:
    """The turn's input for ``msg``'s attachments (conversation/media_in.py), or the one sentence that answers
    instead."""
    files = [
        shared_file(f.name, f.content_type, f.size, functools.partial(download, f.url, base_url), msg.text)
        for f in msg.files
    ]
    errors = (DeliveryError, DiscordUnavailable)
    return files_saver(files, settings, limit=MAX_FILE_BYTES, source="Discord", errors=errors)
