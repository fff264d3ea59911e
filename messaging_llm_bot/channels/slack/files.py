"""A Slack message's files for the turn (``file_share``): each fetched from its ``url_private`` with the bot token
(at most ``MAX_FILE_BYTES``), saved in the chat's area like the other channels' attachments
(conversation/attachments.py), and read for the model by conversation/images.py's ``files_input``: pictures to
a runner that sees them, documents to text, every file named as outside content. A file that cannot be fetched
is named to the model with the reason (or answered with it, when it is the only one)."""

from __future__ import annotations

import asyncio
import logging
from datetime import date
from typing import TYPE_CHECKING

from assistant_framework.config.settings import Settings
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.slack.api import SlackClient, SlackUnavailable
from messaging_llm_bot.channels.slack.format import MAX_FILE_BYTES
from messaging_llm_bot.channels.slack.message import SlackFile, SlackMessage
from messaging_llm_bot.conversation.attachments import SavedFile, save_bytes
from messaging_llm_bot.conversation.images import FilesInput, files_input

if TYPE_CHECKING:  # pragma: no cover
    from assistant_framework.memory.service import MemoryService

log = logging.getLogger(__name__)


async def save_files(
    client: SlackClient,
    msg: SlackMessage,
    settings: Settings,
    area: Workspace,
    today: date,
    index: MemoryService | None,
) -> FilesInput | str:
    """The turn's input for ``msg``'s files, or the one sentence that answers instead."""
    results = [await _save(client, one, area, today, msg.text) for one in msg.files]
    return await files_input(area, results, settings, index=index)


async def _save(client: SlackClient, one: SlackFile, area: Workspace, today: date, caption: str) -> SavedFile | str:
    if one.size > MAX_FILE_BYTES:
        return f"{one.name} is {one.size / 1e6:.1f} MB; I take at most {MAX_FILE_BYTES // 1_000_000} MB."
    try:
        data = await client.download(one.url, MAX_FILE_BYTES)
    except (DeliveryError, SlackUnavailable) as err:
        log.warning("slack: the file %s could not be fetched: %s", one.file_id, err)
        return f"I could not fetch {one.name} from Slack: {err}."
    kind = "photo" if one.mimetype.startswith("image/") else "file"
    mime = one.mimetype or None
    return await asyncio.to_thread(save_bytes, area, data, one.name, today, kind=kind, mime_type=mime, caption=caption)
