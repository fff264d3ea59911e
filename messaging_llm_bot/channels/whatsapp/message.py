"""Meta's webhook payload read into messages: ``entry[].changes[].value.messages[]`` of this phone number.

Statuses (sent, delivered, read, failed) are not messages and are passed over; so are other numbers' events
(one app may serve several) and anything malformed. A message keeps what the turn needs: who sent it (the
``wa_id`` Meta proves by signing the payload), when (the customer service window counts from it), its text or
caption, its attachment (the media id, fetched on use) and the message it replies to (``context``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.inbox.item import InboxPayload
from assistant_framework.json_types import JsonObject
from messaging_llm_bot.channels.contract import Media, MediaKind

#: A payload with more messages than this is cut there (Meta batches a few; a flood is not served whole).
MAX_MESSAGES_PER_POST = 100
MAX_TEXT_CHARS = 16_000
_MEDIA: dict[str, MediaKind] = {"image": "photo", "document": "file", "audio": "audio", "sticker": "sticker"}


@dataclass(frozen=True)
class WaMessage:
    """One message from a WhatsApp user."""

    message_id: str  # wamid...: the inbox takes it once
    sender: str  # wa_id, digits
    timestamp: float  # seconds since the epoch, as Meta gives it
    kind: str  # Meta's type: text, image, audio, document, video, sticker, location, ...
    text: str = ""
    media: Media | None = None
    reply_to: str | None = None  # context.id: the message this one answers
    name: str = ""  # the sender's profile name: for display only
    raw: JsonObject = field(default_factory=dict, compare=False, repr=False)  # Meta's message, for the inbox

    @property
    def readable(self) -> bool:
        """Text, or an attachment the channel reads (a video, a location, a poll: not yet)."""
        return self.kind == "text" or self.media is not None


def _object(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value[:MAX_TEXT_CHARS] if isinstance(value, str) else ""


def _media(kind: str, body: JsonObject) -> Media | None:
    media_kind = _MEDIA.get(kind)
    media_id = body.get("id")
    if media_kind is None or not isinstance(media_id, str) or not media_id.isdigit():
        return None
    if kind == "audio" and body.get("voice") is True:
        media_kind = "voice"
    mime = body.get("mime_type") if isinstance(body.get("mime_type"), str) else ""
    name = body.get("filename") if isinstance(body.get("filename"), str) else ""
    return Media(kind=media_kind, ref=media_id, name=str(name)[:200], mime=str(mime)[:100])


def parse_message(raw: object, names: dict[str, str]) -> WaMessage | None:
    """One entry of ``messages[]``; None when it is not a message this channel can take."""
    if not isinstance(raw, dict):
        return None
    sender, message_id, kind = raw.get("from"), raw.get("id"), raw.get("type")
    if not (isinstance(sender, str) and sender.isdigit() and isinstance(message_id, str) and isinstance(kind, str)):
        return None
    if not message_id or len(message_id) > 200 or not message_id.isprintable():
        return None
    try:
        timestamp = float(raw.get("timestamp") or 0)
    except (TypeError, ValueError):
        timestamp = 0.0
    body = _object(raw.get(kind))
    context = _object(raw.get("context"))
    reply_to = context.get("id") if isinstance(context.get("id"), str) else None
    text = _text(body.get("body")) if kind == "text" else _text(body.get("caption"))
    return WaMessage(
        message_id=message_id,
        sender=sender,
        timestamp=timestamp,
        kind=kind,
        text=text,
        media=_media(kind, body),
        reply_to=reply_to,
        name=names.get(sender, "")[:100],
        raw=raw,
    )


def messages_of(payload: object, phone_number_id: str) -> list[WaMessage]:
    """Every message for ``phone_number_id`` in a webhook payload, in order (at most MAX_MESSAGES_PER_POST)."""
    found: list[WaMessage] = []
    if not isinstance(payload, dict) or payload.get("object") != "whatsapp_business_account":
        return found
    for entry in payload.get("entry") or []:
        for change in (entry.get("changes") or []) if isinstance(entry, dict) else []:
            value = change.get("value") if isinstance(change, dict) else None
            if not isinstance(value, dict) or change.get("field") != "messages":
                continue
            metadata = _object(value.get("metadata"))
            if str(metadata.get("phone_number_id", "")) != phone_number_id:
                continue
            names = {
                str(c.get("wa_id")): str((c.get("profile") or {}).get("name") or "")
                for c in value.get("contacts") or []
                if isinstance(c, dict) and isinstance(c.get("profile") or {}, dict)
            }
            for raw in value.get("messages") or []:
                message = parse_message(raw, names)
                if message is not None:
                    found.append(message)
                if len(found) >= MAX_MESSAGES_PER_POST:
                    return found
    return found


def message_of_payload(payload: InboxPayload) -> WaMessage | None:
    """The message an inbox item stored (``{"message": <Meta's message>, "name": ...}``)."""
    raw = payload.get("message")
    name = payload.get("name") if isinstance(payload.get("name"), str) else ""
    sender = raw.get("from") if isinstance(raw, dict) else None
    return parse_message(raw, {str(sender): str(name)})
