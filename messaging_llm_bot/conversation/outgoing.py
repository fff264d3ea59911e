"""What the conversation service hands a channel to send (docs/channels.md, "The contract"): where it goes, the
reply's text, a file, and the ids the platform gave back. ``channels/contract.py`` names these records for the
adapters; they live here because the service builds them (conversation/chat_turns.py), as it catches
``DeliveryError`` (conversation/delivery.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

#: What a message can carry besides text; a channel lists the kinds it reads and the kinds it sends.
MediaKind = Literal["photo", "file", "voice", "audio", "video", "sticker"]
MEDIA_KINDS: tuple[MediaKind, ...] = ("photo", "file", "voice", "audio", "video", "sticker")


@dataclass(frozen=True)
class Address:
    """Where a message goes: a chat, and the thread (forum topic) inside it when the platform has them."""

    chat_id: str
    thread_id: str | None = None


@dataclass(frozen=True)
class Sent:
    """The platform's ids of the messages one send made (one per part of a split reply)."""

    message_ids: tuple[str, ...]


@dataclass(frozen=True)
class OutgoingFile:
    """A file the bot sends: a photo, a document or a voice note from the workspace."""

    kind: MediaKind
    path: Path
    caption: str = ""


#: Called with each part's index and the platform's message id as soon as that part is out (the ledger).
PartSent = Callable[[int, str], Awaitable[None]]


@dataclass(frozen=True)
class TextOut:
    """A reply to send: Markdown, split by the channel to its limit; ``skip_parts`` already sent (a replay)."""

    markdown: str
    reply_to: str | None = None
    skip_parts: int = 0
    on_part_sent: PartSent | None = field(default=None, compare=False)
    # A stable id of this reply (its inbox item): a platform that takes a client's id for a send (Matrix's
    # transaction ids) gets the same id for the same part when it is sent again after a crash, and keeps one.
    key: str = ""


PartT = TypeVar("PartT")
#: Sends one part of a reply (``index`` counts from its first part; ``reply_to``: the message the first part
#: quotes, None for the others) and gives the platform's id of the message it made; raises the platform's errors.
SendPart = Callable[[int, PartT, "str | None"], Awaitable[str]]


async def send_parts(parts: Sequence[PartT], text: TextOut, send: SendPart[PartT]) -> Sent:
    """``text``'s parts (as the channel split it) from ``text.skip_parts`` on, in order, each by ``send`` and
    reported to ``text.on_part_sent`` as soon as it is out (the ledger: a crash resends only the parts after it);
    only the first part quotes ``text.reply_to``. The ids of the messages this call made."""
    ids: list[str] = []
    for index, part in enumerate(parts):
        if index < text.skip_parts:
            continue
        message_id = await send(index, part, text.reply_to if index == 0 else None)
        if text.on_part_sent is not None:
            await text.on_part_sent(index, message_id)
        ids.append(message_id)
    return Sent(tuple(ids))
