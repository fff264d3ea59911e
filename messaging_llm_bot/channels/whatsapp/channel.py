"""The WhatsApp channel's side of the contract (channels/contract.py): text split to 4,096 characters, files
through the media endpoint, "typing..." with the read receipt, and yes/no questions answered by a reply.

Every send first asks the customer service window (window.py). Inside it, free-form messages; outside it the
configured template, the reply's text as its one body parameter (flattened to one line, in pieces of at most
1,024 characters: Meta refuses a parameter with a line break or longer); without a template ``OutsideWindow``:
the caller keeps the message until the user writes again.
"""

from __future__ import annotations

import asyncio
import mimetypes
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from assistant_framework.config.settings import WhatsAppSettings
from messaging_llm_bot.channels.contract import (
    Address,
    Capabilities,
    DeliveryError,
    Media,
    MediaKind,
    OutgoingFile,
    Sent,
    TextOut,
)
from messaging_llm_bot.channels.whatsapp.format import CAPABILITIES, split, whatsapp_text
from messaging_llm_bot.channels.whatsapp.graph import (
    GraphClient,
    GraphUnavailable,
    MediaObject,
    OutgoingMessage,
    TemplateMessage,
    TextMessage,
)
from messaging_llm_bot.channels.whatsapp.window import ServiceWindow
from messaging_llm_bot.conversation.approvals import OpenQuestions, ReplyApprovals
from messaging_llm_bot.conversation.markup import plain_parts
from messaging_llm_bot.conversation.media_in import Download
from messaging_llm_bot.conversation.outgoing import send_parts

#: Meta's bound on one template parameter.
TEMPLATE_PARAM_CHARS = 1024
#: Meta's message types of a file.
FileType = Literal["image", "audio", "document"]
#: The bytes each kind of file may have on WhatsApp (a larger picture goes as a document).
FILE_LIMITS = {"image": 5 * 2**20, "audio": 16 * 2**20, "document": 100 * 2**20}
PICTURE_TYPES = frozenset({"image/jpeg", "image/png"})
AUDIO_TYPES = frozenset({"audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"})


class OutsideWindow(Exception):
    """More than 24 hours since the user's last message and no ``whatsapp.template``: the message waits."""


def template_parts(markdown: str) -> list[str]:
    """The reply as template parameters: one line each (Meta refuses line breaks, tabs, runs of spaces)."""
    flat = " ".join(whatsapp_text(markdown).split())
    return plain_parts(flat, TEMPLATE_PARAM_CHARS, lambda _ch: 1)


def file_message(kind: MediaKind, mime: str, size: int) -> FileType:
    """Meta's message type for a file: a picture or audio it takes as such, else a document."""
    if kind == "photo" and mime in PICTURE_TYPES and size <= FILE_LIMITS["image"]:
        return "image"
    if kind in ("voice", "audio") and mime in AUDIO_TYPES and size <= FILE_LIMITS["audio"]:
        return "audio"
    return "document"


def media_message(to: str, kind: FileType, media: MediaObject) -> OutgoingMessage:
    """The message of an uploaded file of Meta's type ``kind``."""
    if kind == "image":
        return {"to": to, "type": "image", "image": media}
    if kind == "audio":
        return {"to": to, "type": "audio", "audio": media}
    return {"to": to, "type": "document", "document": media}


class WhatsAppChannel:
    """The contract's ``Channel`` over one ``GraphClient``; called on the channel's event loop."""

    def __init__(
        self,
        client: GraphClient,
        window: ServiceWindow,
        config: Callable[[], WhatsAppSettings],
        questions: OpenQuestions | None = None,
    ) -> None:
        self.client = client
        self.window = window
        self._config = config
        self.questions = questions or OpenQuestions()
        # The agent's ``ask`` approvals, answered by the owner's next message; same open questions as ask_yes_no.
        self.approvals = ReplyApprovals("whatsapp", self.send_question, questions=self.questions)
        self.last_message: dict[str, str] = {}  # wa_id -> their latest message id (what "typing" marks read)

    @property
    def name(self) -> str:
        return "whatsapp"

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    async def start(self) -> None:
        return None

    async def stop(self, timeout: float) -> None:
        await self.client.close()

    def _template(self, number: str, text: str) -> TemplateMessage:
        template = self._config().template
        if not template.name:
            raise OutsideWindow(f"more than 24 hours since {number}'s last message and no whatsapp.template")
        return {
            "to": number,
            "type": "template",
            "template": {
                "name": template.name,
                "language": {"code": template.language},
                "components": [{"type": "body", "parameters": [{"type": "text", "text": text}]}],
            },
        }

    async def send_text(self, to: Address, text: TextOut) -> Sent:
        number = to.chat_id
        inside = self.window.is_open(number)
        parts = split(text.markdown) if inside else template_parts(text.markdown)

        async def send(_index: int, part: str, reply_to: str | None) -> str:
            payload: OutgoingMessage
            if inside:
                message: TextMessage = {"to": number, "type": "text", "text": {"body": part}}
                if reply_to:
                    message["context"] = {"message_id": reply_to}
                payload = message
            else:
                payload = self._template(number, part)
            return await self.client.send(payload)

        return await send_parts(parts, text, send)

    async def edit_text(self, to: Address, message_id: str, markdown: str) -> bool:
        return False  # the Cloud API cannot edit a sent message

    async def typing(self, to: Address) -> None:
        """Mark the user's latest message read with "typing..." (the API shows typing only that way)."""
        message_id = self.last_message.get(to.chat_id)
        if message_id and self._config().typing:
            await self.client.mark_read(message_id, typing=True)

    async def send_file(self, to: Address, file: OutgoingFile) -> Sent:
        if not self.window.is_open(to.chat_id):
            raise OutsideWindow(f"a file to {to.chat_id} waits for their next message (24-hour window)")
        size = await asyncio.to_thread(lambda: file.path.stat().st_size)
        mime = mimetypes.guess_type(file.path.name)[0] or "application/octet-stream"
        kind = file_message(file.kind, mime, size)
        if size > FILE_LIMITS[kind]:
            raise DeliveryError(f"{file.path.name} is larger than {FILE_LIMITS[kind] // 2**20} MB", for_good=True)
        data = await asyncio.to_thread(file.path.read_bytes)
        media_id = await self.client.upload(data, mime, file.path.name)
        media: MediaObject = {"id": media_id}
        if kind != "audio" and file.caption:
            media["caption"] = file.caption[:1024]
        if kind == "document":
            media["filename"] = file.path.name
        return Sent((await self.client.send(media_message(to.chat_id, kind, media)),))

    async def download(self, media: Media, limit_bytes: int) -> Download | str:
        return await self.client.download(media.ref, limit_bytes)

    async def fetch(self, media: Media, folder: Path, limit_bytes: int) -> Path:
        got = await self.download(media, limit_bytes)
        if isinstance(got, str):
            raise DeliveryError(got, for_good=True)
        target = folder / (Path(media.name).name or default_name(media, got.mime))
        await asyncio.to_thread(target.write_bytes, got.data)
        return target

    async def ask_yes_no(self, to: Address, question: str, timeout: float) -> bool:
        """Ask ``to``; their next "yes" or "no" answers (``resolve``)."""
        return await self.questions.ask_yes_no(to.chat_id, lambda: self.send_text(to, TextOut(question)), timeout)

    def resolve(self, number: str, text: str) -> bool:
        """Answer an open question of ``number`` with ``text``; True when the message was that answer."""
        return self.approvals.resolve(number, text)

    async def send_question(self, number: str, text: str) -> None:
        """An approval's question (or its timeout) to ``number``; ``DeliveryError`` when it cannot go now."""
        try:
            await self.send_text(Address(number), TextOut(text))
        except (GraphUnavailable, OutsideWindow) as err:
            raise DeliveryError(str(err)) from err


def default_name(media: Media, mime: str) -> str:
    """A name for a file WhatsApp sends without one (a picture, a voice note): its kind, id and extension."""
    plain = (media.mime or mime).split(";")[0].strip()
    extension = ".ogg" if plain == "audio/ogg" else mimetypes.guess_extension(plain) or ""
    return f"whatsapp-{media.kind}-{media.ref}{extension}"
