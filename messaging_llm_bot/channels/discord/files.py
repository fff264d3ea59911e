"""A Discord message's attachments for the turn: each fetched from its URL (Discord's CDN, or the configured API's
own host: a message naming another host gets nothing fetched), at most ``MAX_FILE_BYTES`` counted while read, saved
in the chat's area like the other channels' attachments (conversation/attachments.py), and read for the model by
conversation/images.py's ``files_input``: pictures to a runner that sees them, documents to text, every file
named as outside content. A file that cannot be fetched is named to the model with the reason (or answered with
it, when it is the only one)."""

from __future__ import annotations

import asyncio
import logging
from datetime import date
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx

from assistant_framework.config.settings import Settings
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.discord.api import DiscordUnavailable
from messaging_llm_bot.channels.discord.format import MAX_FILE_BYTES
from messaging_llm_bot.channels.discord.message import DiscordFile, DiscordMessage
from messaging_llm_bot.conversation.attachments import SavedFile, save_bytes
from messaging_llm_bot.conversation.images import FilesInput, files_input

if TYPE_CHECKING:  # pragma: no cover
    from assistant_framework.memory.service import MemoryService

log = logging.getLogger(__name__)

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
    data = bytearray()
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS) as client, client.stream("GET", url) as response:
            if response.status_code != 200:
                raise DiscordUnavailable(f"Discord's file host answered {response.status_code}")
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) > limit:
                    raise DeliveryError(f"the file is larger than {limit // 2**20} MB", for_good=True)
    except httpx.HTTPError as err:
        raise DiscordUnavailable(f"Discord's file host cannot be reached: {type(err).__name__}") from None
    return bytes(data)


async def save_files(
    base_url: str, msg: DiscordMessage, settings: Settings, area: Workspace, today: date, index: MemoryService | None
) -> FilesInput | str:
    """The turn's input for ``msg``'s attachments, or the one sentence that answers instead."""
    results = [await _save(base_url, one, area, today, msg.text) for one in msg.files]
    return await files_input(area, results, settings, index=index)


async def _save(base_url: str, one: DiscordFile, area: Workspace, today: date, caption: str) -> SavedFile | str:
    if one.size > MAX_FILE_BYTES:
        return f"{one.name} is {one.size / 2**20:.1f} MB; I take at most {MAX_FILE_BYTES // 2**20} MB."
    try:
        data = await download(one.url, base_url, MAX_FILE_BYTES)
    except (DeliveryError, DiscordUnavailable) as err:
        log.warning("discord: the attachment %s could not be fetched: %s", one.attachment_id, err)
        return f"I could not fetch {one.name} from Discord: {err}."
    kind = "photo" if one.content_type.startswith("image/") else "file"
    mime = one.content_type or None
    return await asyncio.to_thread(save_bytes, area, data, one.name, today, kind=kind, mime_type=mime, caption=caption)
