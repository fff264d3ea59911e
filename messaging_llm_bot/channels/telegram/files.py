"""Files out on Telegram (the ``send_file`` skill): a JPEG, PNG or WebP under 10 MB as a photo
(``sendPhoto``), anything else as a document (``sendDocument``), in the chat and forum topic answered."""

from __future__ import annotations

import asyncio

import telegram
from telegram import InputFile

from assistant_framework.media.files_out import FileToSend

#: The Bot API's bound on an uploaded photo; a bigger picture goes as a document.
MAX_PHOTO_BYTES = 10_000_000


async def send_workspace_file(bot: telegram.Bot, chat_id: int, topic: int | None, one: FileToSend) -> str:
    """Send ``one`` to the chat; the message id. Raises ``TelegramError`` when the Bot API refuses."""
    data = await asyncio.to_thread(one.path.read_bytes)
    name = one.path.name
    caption = one.caption or None
    if one.photo and one.size <= MAX_PHOTO_BYTES:
        sent = await bot.send_photo(chat_id, InputFile(data, filename=name), caption=caption, message_thread_id=topic)
    else:
        sent = await bot.send_document(
            chat_id, InputFile(data, filename=name), caption=caption, message_thread_id=topic
        )
    return str(sent.message_id)
