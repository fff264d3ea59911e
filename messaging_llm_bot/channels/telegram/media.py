"""Non-text Telegram messages: what kind each is, and its document, photo or voice note as conversation/media_in.py
fetches it from the Bot API."""

from __future__ import annotations

import functools

import telegram
from telegram.constants import FileSizeLimit

from messaging_llm_bot.conversation.attachments import sanitize_name
from messaging_llm_bot.conversation.media_in import FileIn

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


def file_of(bot: telegram.Bot, message: telegram.Message) -> FileIn:
    """The message's document, largest photo or voice note, with its caption, fetched from the Bot API when the
    turn reads it (conversation/media_in.py)."""
    kind = message_kind(message)
    media: telegram.Document | telegram.PhotoSize | telegram.Voice | None
    if kind == "document":
        media = message.document
        name, mime = sanitize_name(media.file_name or "", fallback=f"document-{message.message_id}"), media.mime_type
    elif kind == "photo":
        media = message.photo[-1]  # sizes come smallest first
        name, mime = f"photo-{message.message_id}.jpg", "image/jpeg"
    elif kind == "voice":
        media = message.voice
        name, mime = "voice.ogg", media.mime_type or "audio/ogg"
    else:
        return FileIn(kind, kind, None, None, functools.partial(_not_saved, kind))
    fetch = functools.partial(download, bot, media.file_id, name)
    return FileIn(name, kind, mime, media.file_size or None, fetch, message.caption or "")


async def download(bot: telegram.Bot, file_id: str, name: str, _limit: int) -> bytes | str:
    """A file's bytes from the Bot API (it refuses a file over ``MAX_DOWNLOAD_BYTES``: its size is checked before),
    or the sentence for the sender."""
    try:
        return bytes(await (await bot.get_file(file_id)).download_as_bytearray())
    except telegram.error.TelegramError as err:
        return f"I could not fetch {name} from Telegram: {err}."


async def _not_saved(kind: str, _limit: int) -> str:
    return f"A {kind} cannot be saved as an attachment."
