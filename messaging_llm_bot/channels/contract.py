"""The channel contract (docs/channels.md): what a chat surface is to the rest of the bot.

A channel is an adapter between one platform (Telegram, Signal, the terminal, ...) and the conversation
service (messaging_llm_bot/conversation/). It turns the platform's events into ``Incoming`` records and
carries the service's replies back: text split to the platform's limit, edits for streaming where the
platform can, typing, files out, a yes/no question for ``ask`` approvals. What it can do is data
(``Capabilities``), so the service asks the record instead of the channel's name. Identity, addressing
(mentions, group modes) and the platform's own errors stay inside the adapter.

Only these dataclasses cross the contract, never ``dict[str, Any]``: a platform's payload stays in its
adapter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

# Raised by the adapters, read by the conversation service: it lives there (conversation/delivery.py).
from messaging_llm_bot.conversation.delivery import DeliveryError as DeliveryError

# Built by the conversation service, sent by the adapters: they live there too (conversation/outgoing.py).
from messaging_llm_bot.conversation.outgoing import MEDIA_KINDS as MEDIA_KINDS
from messaging_llm_bot.conversation.outgoing import Address as Address
from messaging_llm_bot.conversation.outgoing import MediaKind as MediaKind
from messaging_llm_bot.conversation.outgoing import OutgoingFile as OutgoingFile
from messaging_llm_bot.conversation.outgoing import PartSent as PartSent
from messaging_llm_bot.conversation.outgoing import Sent as Sent
from messaging_llm_bot.conversation.outgoing import TextOut as TextOut

#: How a platform counts its message limit: Telegram in UTF-16 code units, Signal in UTF-8 bytes.
LengthUnit = Literal["utf16", "utf8", "chars"]


@dataclass(frozen=True)
class Capabilities:
    """What a channel can do, as data: the conversation service reads this, never the channel's name."""

    max_message_length: int  # one message's limit; longer replies are split (conversation/markup.py)
    length_unit: LengthUnit = "chars"
    can_edit: bool = False  # a sent message can be edited: a streamed reply grows in place
    typing: bool = False  # the platform shows "typing..."
    threads: bool = False  # conversations inside a chat (Telegram forum topics)
    groups: bool = False  # chats with more than the bot and one person
    buttons: bool = False  # a yes/no question has buttons (else it is answered by a reply)
    media_in: frozenset[MediaKind] = frozenset()
    media_out: frozenset[MediaKind] = frozenset()
    max_file_bytes: int = 0  # the largest file the bot may send (the ``send_file`` skill); 0: none

    def __post_init__(self) -> None:
        if self.max_message_length < 1:
            raise ValueError(f"max_message_length must be at least 1, not {self.max_message_length}")
        unknown = (self.media_in | self.media_out) - set(MEDIA_KINDS)
        if unknown:
            raise ValueError(f"unknown media kinds: {sorted(unknown)}")


@dataclass(frozen=True)
class Sender:
    """Who sent a message, as the platform proves it (Telegram's numeric id, Signal's account UUID)."""

    user_id: str
    name: str = ""  # for display only: never an identity
    is_bot: bool = False


@dataclass(frozen=True)
class Media:
    """One attachment of an incoming message; its bytes are fetched by the adapter (``Channel.fetch``)."""

    kind: MediaKind
    ref: str  # the platform's handle for it (a file id, an attachment id)
    name: str = ""
    mime: str = ""
    size: int | None = None  # bytes, when the platform says (the service refuses what is too big before fetching)


@dataclass(frozen=True)
class Incoming:
    """One message from a chat, the same record from every channel."""

    channel: str  # the registry's name of the channel ("telegram")
    message_id: str  # the platform's id of the message: the durable inbox takes it once (dedup)
    sender: Sender
    address: Address
    conversation_id: str  # whose history and memory scope the turn uses ("tg:7", "tg:7:12", "sig:<uuid>")
    text: str = ""
    media: tuple[Media, ...] = ()
    is_group: bool = False
    reply_to: str | None = None  # the platform's id of the message this one answers
    quoted: str | None = None  # the text of that message, when the platform sends it along
    forwarded_from: str | None = None  # "Mallory" for a forward: the text is someone else's (outside content)
    album: str | None = None  # the platform's group id of messages sent together (answered in one turn)


@runtime_checkable
class Channel(Protocol):
    """One chat surface. Every method is called on the channel's own event loop."""

    @property
    def name(self) -> str:
        """The registry's name ("telegram"): the prefix of its conversations is the registry's."""
        ...

    @property
    def capabilities(self) -> Capabilities: ...

    async def start(self) -> None:
        """Connect and begin handing ``Incoming`` records to the conversation service."""
        ...

    async def stop(self, timeout: float) -> None:
        """Stop taking messages; turns running get ``timeout`` seconds, the rest stays in the inbox."""
        ...

    async def send_text(self, to: Address, text: TextOut) -> Sent:
        """Send a reply split to ``capabilities.max_message_length``; raises ``DeliveryError`` when it cannot."""
        ...

    async def edit_text(self, to: Address, message_id: str, markdown: str) -> bool:
        """Replace a sent message's text (a streamed reply); False when the platform cannot or refused."""
        ...

    async def typing(self, to: Address) -> None:
        """Show "typing..." once (the service repeats it while a turn runs); nothing where there is none."""
        ...

    async def send_file(self, to: Address, file: OutgoingFile) -> Sent:
        """Send a photo, document or voice note; raises ``DeliveryError`` when it cannot."""
        ...

    async def fetch(self, media: Media, folder: Path, limit_bytes: int) -> Path:
        """Save an incoming attachment under ``folder`` (at most ``limit_bytes``); its path."""
        ...

    async def ask_yes_no(self, to: Address, question: str, timeout: float) -> bool:
        """Ask the owner a yes/no question (an ``ask`` approval); False when declined or not answered in time."""
        ...


@dataclass(frozen=True)
class RunOptions:
    """How ``channels/run.py`` starts a channel's runner: the first channel of a process keeps the main
    thread, its stop signals and the runtime's shutdown; the others run in threads beside it."""

    stop_signals: tuple[int, ...] = ()  # the signals it stops on (only the main thread can take them)
    manage_runtime: bool = True  # it shuts the runtime down when it ends


class ChannelRunner(Protocol):
    """One channel running in a process: what ``runner(runtime, options)`` in ``channels/<name>/entry.py``
    returns (docs/channels.md, "Writing a channel")."""

    def run(self) -> int:
        """Serve until stopped (blocks the calling thread); the exit code: 0 stopped, 1 failed, 2 usage."""
        ...

    def stop(self, timeout: float) -> None:
        """Ask it to stop, from any thread; turns running get ``timeout`` seconds."""
        ...
