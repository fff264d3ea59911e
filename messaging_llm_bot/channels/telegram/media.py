"""Non-text Telegram messages: documents and photos saved to ``inbox/<date>/``, voice notes transcribed.

The model never sees file bytes; it is told where the file was saved and the caption, as an
attachment (untrusted content). Kinds the bot cannot handle get a short reply saying so
(conversation/attachments.py's ``unsupported_text``).
"""

from __future__ import annotations

import asyncio
from datetime import date

import telegram
from telegram.constants import FileSizeLimit

from assistant_framework.config.settings import TranscriptionSettings
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.attachments import SavedFile, sanitize_name, save_bytes
from messaging_llm_bot.llm.transcribe import Transcription, transcribe

MAX_DOWNLOAD_BYTES = int(FileSizeLimit.FILESIZE_DOWNLOAD)  # 20 MB: the Bot API refuses bigger downloads
_OTHER_KINDS = [
    "sticker",
    "video",
    "video_note",
    "animation",
    "audio",
    "location",
    "venue",
    "contact",
    "poll",
    "dice",
    "game",
    "story",
]


def message_kind(message: telegram.Message) -> str:
    """The kind of a message: text, document, photo, voice, or what else it carries."""
    if message.text is not None:
        return "text"
    # An animation also sets ``document``; treat it as an animation, not a file to save.
    if message.animation is not None:
        return "animation"
    for kind in ("document", "photo", "voice"):
        if getattr(message, kind, None):
            return kind
    for kind in _OTHER_KINDS:
        if getattr(message, kind, None):
            return kind
    return "other"


async def save_attachment(bot: telegram.Bot, ws: Workspace, message: telegram.Message, today: date) -> SavedFile | str:
    """Download a document or the largest photo size into ``inbox/<today>/``; an error text on failure."""
    kind = message_kind(message)
    media: telegram.Document | telegram.PhotoSize | None
    if kind == "document":
        media = message.document
        name = sanitize_name(media.file_name or "", fallback=f"document-{message.message_id}")
        mime = media.mime_type
    elif kind == "photo":
        media = message.photo[-1]  # sizes come smallest first
        name = f"photo-{message.message_id}.jpg"
        mime = "image/jpeg"
    else:
        return f"A {kind} cannot be saved as an attachment."
    if media.file_size and media.file_size > MAX_DOWNLOAD_BYTES:
        return (
            f"That file is {media.file_size / 1e6:.1f} MB; Telegram lets bots download at most "
            f"{MAX_DOWNLOAD_BYTES // 1_000_000} MB."
        )
    try:
        tg_file = await bot.get_file(media.file_id)
        data = bytes(await tg_file.download_as_bytearray())
    except telegram.error.TelegramError as err:
        return f"Downloading the {kind} from Telegram failed: {err}"
    caption = message.caption or ""
    return await asyncio.to_thread(save_bytes, ws, data, name, today, kind=kind, mime_type=mime, caption=caption)


async def transcribe_voice(
    bot: telegram.Bot, message: telegram.Message, settings: TranscriptionSettings
) -> Transcription:
    """Download a voice note and send it to the configured transcription endpoint."""
    voice = message.voice
    if voice.file_size and voice.file_size > MAX_DOWNLOAD_BYTES:
        return Transcription(error=f"the voice note is larger than {MAX_DOWNLOAD_BYTES // 1_000_000} MB")
    try:
        data = bytes(await (await bot.get_file(voice.file_id)).download_as_bytearray())
    except telegram.error.TelegramError as err:
        return Transcription(error=f"downloading the voice note from Telegram failed: {err}")
    return await asyncio.to_thread(transcribe, settings, data, "voice.ogg", voice.mime_type or "audio/ogg")
