"""What the conversation service hands a channel to send (docs/channels.md, "The contract"): where it goes, the
reply's text, a file, and the ids the platform gave back. ``channels/contract.py`` names these records for the
adapters; they live here because the service builds them (conversation/chat_turns.py), as it catches
``DeliveryError`` (conversation/delivery.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

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
