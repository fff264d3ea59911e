"""One attachment of a message into the turn, the same on every channel that fetches it by its handle (Matrix,
WhatsApp): a voice message transcribed when ``llm.transcription`` is set (its words are the turn's text),
any other file (and a voice message without transcription) saved in the chat's area and read for the model
(conversation/images.py: pictures for a runner that sees them, a document's text), with the notice that the
model cannot see images once per chat; a sentence instead when it cannot go (too large, gone, unreadable)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import date
from typing import TYPE_CHECKING, Protocol

from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.attachments import save_bytes
from messaging_llm_bot.conversation.images import FilesInput, files_input
from messaging_llm_bot.conversation.turn import ChannelTurns, Received, TurnInput
from messaging_llm_bot.llm.transcribe import transcribe, transcription_settings

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from assistant_framework.config.settings import TranscriptionSettings
    from assistant_framework.memory.service import MemoryService
    from messaging_llm_bot.llm.transcribe import Transcription


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
