"""A message's attachments into the turn, the same on every channel that fetches them by a handle of the platform's.

``attachment_input`` (Matrix, WhatsApp): one attachment, a voice message transcribed when ``llm.transcription`` is
set (its words are the turn's text), any other file (and a voice message without transcription) saved in the
chat's area and read for the model (conversation/images.py: pictures for a runner that sees them, a document's
text), with the notice that the model cannot see images once per chat; a sentence instead when it cannot go (too
large, gone, unreadable). ``files_saver`` (Telegram, Signal, Slack, Discord): every attachment of a message saved
and read for the model together. The bounds are the same everywhere: a size the platform gives above the channel's limit
is refused before any byte is fetched (``too_large``), a download is read no further than the limit
(``read_within``), and either is said to the sender in one sentence.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Protocol

from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.attachments import SavedFile, sanitize_name, save_bytes
from messaging_llm_bot.conversation.images import FilesInput, files_input
from messaging_llm_bot.conversation.turn import ChannelTurns, Received, SaveFiles, TurnInput
from messaging_llm_bot.llm.transcribe import Transcription, transcribe, transcription_settings

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from assistant_framework.config.settings import Settings, TranscriptionSettings
    from assistant_framework.memory.service import MemoryService

log = logging.getLogger(__name__)


def too_large(size: int, limit: int, name: str = "That file") -> str:
    """The sentence for an attachment whose size (as the platform gives it) is above ``limit`` bytes."""
    return f"{name} is {size / 1e6:.1f} MB; I take at most {limit // 1_000_000} MB."


def larger_than(limit: int) -> str:
    """The sentence for a download that passed ``limit`` bytes while it was read (``read_within``)."""
    return f"That file is larger than {limit // 1_000_000} MB, the most I take."


async def read_within(chunks: AsyncIterable[bytes], limit: int) -> bytes | None:
    """The chunks of a download joined, or None as soon as they pass ``limit`` bytes (the rest is not read)."""
    data = bytearray()
    async for chunk in chunks:
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)


@dataclass(frozen=True)
class Download:
    """An attachment's bytes and the type the platform gave."""

    data: bytes
    mime: str


@dataclass(frozen=True)
class FileIn:
    """One attachment of a message as ``files_saver`` saves it: its file name, its kind and type for the saved
    file's record, the size the platform gives (None: not given), its caption, and how to fetch it within a
    limit (its bytes, or the sentence for the sender; it may raise the errors ``files_saver`` is given)."""

    name: str
    kind: str  # photo, document, voice, file: as attachments.py records it
    mime: str | None
    size: int | None
    fetch: Callable[[int], Awaitable[bytes | str]]
    caption: str = ""


def shared_file(name: str, mime: str, size: int, fetch: Callable[[int], Awaitable[bytes]], caption: str) -> FileIn:
    """A file shared with a message where the platform says only its type (Slack, Discord): a picture is a photo
    (for a runner that sees it), anything else a file."""
    return FileIn(name, "photo" if mime.startswith("image/") else "file", mime or None, size, fetch, caption)


def files_saver(
    files: Sequence[FileIn],
    settings: Settings,
    *,
    limit: int,
    source: str,
    errors: tuple[type[Exception], ...] = (),
    origin: str = "",
) -> SaveFiles:
    """The turn's ``Received.save`` for a message's attachments: each fetched within ``limit`` bytes and saved in the
    chat's area, then read for the model together (conversation/images.py). One that cannot be fetched (too large,
    one of ``errors`` raised: "I could not fetch it from ``source``") is named to the model with the reason, or
    answers with it when it is the only one. ``origin``: where the files come from when they are someone else's
    (``"forwarded from Mallory"``), said to the model with them."""

    async def save(area: Workspace, today: date, index: MemoryService | None) -> FilesInput | str:
        results = [await _save_one(one, area, today, limit, source, errors) for one in files]
        return await files_input(area, results, settings, origin, index=index)

    return save


async def fetch_within(one: FileIn, limit: int) -> bytes | str:
    """``one``'s bytes, or the sentence for the sender; a fetch that reads a whole answer (signal-cli gives a file
    base64 in one JSON-RPC answer) may pass ``limit``, and a platform may give no size: neither is taken."""
    from assistant_framework.http_deadline import BodyTooLarge  # on use: it loads requests

    try:
        data = await one.fetch(limit)
    except BodyTooLarge:  # the answer was cut while read (assistant_framework/jsonrpc_http.py: max_bytes)
        return larger_than(limit)
    return larger_than(limit) if isinstance(data, bytes) and len(data) > limit else data


async def _save_one(
    one: FileIn, area: Workspace, today: date, limit: int, source: str, errors: tuple[type[Exception], ...]
) -> SavedFile | str:
    # The sender's name for the file is said as it would be saved: no path, no control or direction character, at
    # most 100 characters (a sentence repeating 10,000 of them was six messages).
    name = sanitize_name(one.name)
    if one.size is not None and one.size > limit:
        return too_large(one.size, limit, name)
    try:
        data = await fetch_within(one, limit)
    except errors as err:
        log.warning("%s: the attachment %s could not be fetched: %s", source, name, err)
        return f"I could not fetch {name} from {source}: {err}."
    if isinstance(data, str):
        return data
    kind, mime, caption = one.kind, one.mime, one.caption
    return await asyncio.to_thread(save_bytes, area, data, one.name, today, kind=kind, mime_type=mime, caption=caption)


async def transcribe_file(one: FileIn, config: TranscriptionSettings, limit: int) -> Transcription:
    """A voice note's transcript (``one`` fetched within ``limit`` bytes), or why there is none in its ``error``."""
    if one.size is not None and one.size > limit:
        return Transcription(error=too_large(one.size, limit))
    data = await fetch_within(one, limit)
    if isinstance(data, str):
        return Transcription(error=data)
    return await asyncio.to_thread(transcribe, config, data, one.name, one.mime or "audio/aac")


class Attachment(Protocol):
    """What this step reads of the message's attachment (the contract's ``Media``)."""

    @property
    def kind(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def mime(self) -> str: ...


class FetchedMedia(Protocol):
    """An attachment's bytes and the type the platform gave."""

    @property
    def data(self) -> bytes: ...

    @property
    def mime(self) -> str: ...


#: Fetches the attachment (bounded): its bytes, or the sentence for the user (too large, gone).
Fetch = Callable[[], Awaitable["FetchedMedia | str"]]


async def attachment_input(
    turns: ChannelTurns,
    conversation_id: str,
    owner_chat: bool,
    media: Attachment,
    caption: str,
    fetch: Fetch,
    name: Callable[[str], str],
) -> TurnInput | str:
    """The turn's input for ``media`` (``caption``: the message's own words; ``name``: the file's name, given the
    type the platform sent), or the sentence that answers instead (ChannelTurns.read)."""
    got = await fetch()
    if isinstance(got, str):
        return got
    data, mime = got.data, media.mime or got.mime
    if media.kind == "voice" and transcription_settings(turns.runtime.settings.llm) is not None:

        async def heard(config: TranscriptionSettings) -> Transcription:
            return await asyncio.to_thread(transcribe, config, data, media.name or "voice.ogg", mime)

        return await turns.read(conversation_id, owner_chat, Received("voice", transcribe=heard))
    kind = "photo" if media.kind == "photo" else "voice note" if media.kind == "voice" else media.kind

    async def save(area: Workspace, today: date, _index: MemoryService | None) -> FilesInput | str:
        saved = await asyncio.to_thread(
            save_bytes, area, data, name(got.mime), today, kind=kind, mime_type=mime, caption=caption
        )
        return await files_input(area, [saved], turns.runtime.settings)  # no document index here yet

    return await turns.read(conversation_id, owner_chat, Received("document", save=save))
