"""What the model is given for a Signal message with files (a document, photos, an album): each file saved
in the chat's area, then the same input every frontend builds from saved files (conversation/images.py)."""

from __future__ import annotations

from datetime import date

from assistant_framework.config.settings import Settings
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.signal import media
from messaging_llm_bot.channels.signal.client import SignalClient
from messaging_llm_bot.channels.signal.settings import SignalMessage
from messaging_llm_bot.conversation.documents import DocumentIndex
from messaging_llm_bot.conversation.images import FilesInput
from messaging_llm_bot.conversation.images import files_input as input_of_files


async def files_input(
    client: SignalClient,
    area: Workspace,
    msg: SignalMessage,
    today: date,
    settings: Settings,
    index: DocumentIndex | None = None,
) -> FilesInput | str:
    """Save the message's files in ``area`` and build the model's input; a sentence instead when no file
    could be fetched, every file is an image that cannot go (HEIC, too large), or the one document's text
    cannot be read. ``index``: the owner's memory, for a document's text (None in a guest's chat)."""
    saved = await media.save_attachments(client, area, msg, today)
    return await input_of_files(area, saved, settings, index=index)
