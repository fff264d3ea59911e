"""Incoming envelopes as records (their attachments' kinds and names, mentions, quotes), whom a message addresses,
and how a chat is addressed in a send. Pure functions only: no network, no files.
"""

from __future__ import annotations

import mimetypes
import re
from dataclasses import dataclass, field
from typing import Any

from assistant_framework.config.settings import SignalSettings
from assistant_framework.config.settings.chat import SIGNAL_UUID, signal_id
from messaging_llm_bot.conversation.markup import slice16

E164_RE = re.compile(r"^\+[1-9][0-9]{6,14}$")
MENTION_PLACEHOLDER = "\ufffc"  # Signal puts U+FFFC where a mention is, and lists the mentions apart
#: A body over 2000 bytes travels as this attachment; signal-cli puts its text in "message" and still lists it.
LONG_TEXT = "text/x-signal-plain"
PREFIX = "sig:"


@dataclass
class SignalMessage:
    """One data message from the event stream, in the fields the bot uses."""

    number: str | None
    uuid: str | None
    timestamp: int
    text: str
    group_id: str | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)
    mentions: list[dict[str, Any]] = field(default_factory=list)
    quote: dict[str, Any] | None = None

    @property
    def sender(self) -> str:
        """The sender's number, or their ACI UUID when the number is hidden."""
        return self.number or self.uuid or "?"

    @property
    def chat(self) -> str:
        """The chat a reply goes to: the group id or the sender."""
        return self.group_id or self.sender

    @property
    def conversation_id(self) -> str:
        """The Agent conversation id (``sig:+4915...`` or ``sig:<group id>``)."""
        return PREFIX + self.chat

    @property
    def source_id(self) -> str:
        """The inbox key: sender and timestamp identify a Signal message."""
        return f"{PREFIX}{self.uuid or self.number}:{self.timestamp}"

    def kind(self) -> str:
        """text, voice, photo, document (the first attachment's kind) or sticker: ``parse_event`` keeps no other."""
        if self.attachments:
            return attachment_kind(self.attachments[0])
        return "text" if self.text else "sticker"


def attachment_kind(att: dict[str, Any]) -> str:
    """voice, photo or document, by the attachment's content type."""
    content = str(att.get("contentType") or "")
    if content.startswith("audio/"):
        return "voice"
    if content.startswith("image/") and content != "image/gif":
        return "photo"
    return "document"


def attachment_name(att: dict[str, Any], msg: SignalMessage) -> str:
    """The file name to save under: the sender's name for it, else one made from kind and timestamp."""
    if att.get("filename"):
        return str(att["filename"])
    stored = str(att.get("id") or "")  # signal-cli's file: the id and the extension of the type, where it knows one
    ext = stored.rpartition(".")[2] if "." in stored else mimetypes.guess_extension(str(att.get("contentType")))
    return f"{attachment_kind(att)}-{msg.timestamp}.{(ext or 'bin').lstrip('.')}"


def parse_event(obj: dict[str, Any]) -> SignalMessage | None:
    """The data message of a receive object, or None (receipts, typing, sync, reactions, edits, group updates)."""
    env = obj.get("envelope") if isinstance(obj, dict) else None
    if not isinstance(env, dict):
        return None
    data = env.get("dataMessage")
    if not isinstance(data, dict) or data.get("reaction") or data.get("remoteDelete"):
        return None
    text = data.get("message") or ""
    attachments = [
        a for a in data.get("attachments") or [] if isinstance(a, dict) and a.get("contentType") != LONG_TEXT
    ]  # its text is already in "message"
    if not text and not attachments and not data.get("sticker"):
        return None  # group updates, expiration timer changes, ...
    group = data.get("groupInfo") or {}
    return SignalMessage(
        number=env.get("sourceNumber") or (env.get("source") if E164_RE.match(str(env.get("source") or "")) else None),
        uuid=signal_id(str(env["sourceUuid"])) if env.get("sourceUuid") else None,
        timestamp=int(data.get("timestamp") or env["timestamp"]),
        text=text,
        group_id=group.get("groupId") if isinstance(group, dict) else None,
        attachments=attachments,
        mentions=[m for m in data.get("mentions") or [] if isinstance(m, dict)],
        quote=data.get("quote") if isinstance(data.get("quote"), dict) else None,
    )


def is_bot(number: str | None, uuid: str | None, account: str, account_uuid: str | None) -> bool:
    """True when a number/UUID is the bot's own account."""
    return bool((number and number == account) or (uuid and account_uuid and signal_id(uuid) == account_uuid))


def addressed_to_bot(msg: SignalMessage, settings: SignalSettings, account_uuid: str | None = None) -> bool:
    """Direct chats always; groups when mode is "all", a /command, or the bot is mentioned or quoted."""
    if msg.group_id is None or settings.group_mode == "all" or msg.text.startswith("/"):
        return True
    if any(is_bot(m.get("number"), m.get("uuid"), settings.account, account_uuid) for m in msg.mentions):
        return True
    quote = msg.quote or {}
    return is_bot(
        quote.get("authorNumber") or quote.get("author"), quote.get("authorUuid"), settings.account, account_uuid
    )


def model_text(msg: SignalMessage, account: str, account_uuid: str | None = None) -> str:
    """The message text with mentions spelled out (``@Name``) and the bot's own mention removed."""
    text = msg.text
    for mention in sorted(msg.mentions, key=lambda m: int(m.get("start", 0)), reverse=True):  # offsets: UTF-16
        start, length = int(mention.get("start", 0)), int(mention.get("length", 1))
        name = (
            ""
            if is_bot(mention.get("number"), mention.get("uuid"), account, account_uuid)
            else "@" + str(mention.get("name") or mention.get("number") or mention.get("uuid") or "someone")
        )
        text = slice16(text, 0, start) + name + slice16(text, start + length, None)
    return re.sub(r"[ \t]{2,}", " ", text.replace(MENTION_PLACEHOLDER, "")).strip() or msg.text.strip()


def recipient_params(chat: str) -> dict[str, Any]:
    """``send``/``sendTyping`` params addressing a chat id (a number/UUID or a group id)."""
    if E164_RE.match(chat) or SIGNAL_UUID.match(chat):
        return {"recipient": [chat]}
    return {"groupId": chat}
