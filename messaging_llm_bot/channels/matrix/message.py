"""One Matrix message event as the channel uses it: who, where (room, thread), what (text, an attachment),
and whether it is addressed to the bot. Pure: the raw event stays the inbox item's payload."""

from __future__ import annotations

from dataclasses import dataclass

from assistant_framework.json_types import JsonObject
from messaging_llm_bot.channels.contract import Address, Incoming, Media, MediaKind, Sender
from messaging_llm_bot.channels.matrix.settings import conversation_of

#: msgtype -> the contract's media kind; m.text, m.emote and m.notice are text.
_MEDIA: dict[str, MediaKind] = {"m.image": "photo", "m.file": "file", "m.audio": "audio", "m.video": "video"}
MAX_TEXT_CHARS = 32_000  # a longer body is cut (the homeserver allows 65,536 bytes an event)


@dataclass(frozen=True)
class MatrixMessage:
    """A message in a room the bot is in."""

    room_id: str
    event_id: str
    sender: str
    msgtype: str
    text: str
    thread: str | None  # the thread's root event, when the message is in a thread
    direct: bool  # a room of the bot and one person
    media: Media | None = None
    reply_to: str | None = None
    mentions_bot: bool = False

    @property
    def conversation_id(self) -> str:
        return conversation_of(self.room_id, self.thread)

    @property
    def address(self) -> Address:
        return Address(self.room_id, self.thread)

    def incoming(self) -> Incoming:
        """The contract's record of this message."""
        return Incoming(
            channel="matrix",
            message_id=self.event_id,
            sender=Sender(self.sender),
            address=self.address,
            conversation_id=self.conversation_id,
            text=self.text,
            media=(self.media,) if self.media is not None else (),
            is_group=not self.direct,
            reply_to=self.reply_to,
        )


def parse_message(room_id: str, event: JsonObject, direct: bool, bot: str) -> MatrixMessage | None:
    """The message in ``event`` (a raw ``m.room.message``), or None for anything else: an edit, a notice (bots
    talk in notices: never answered, no loops), a redacted or malformed event."""
    if event.get("type") != "m.room.message" or not isinstance(event.get("content"), dict):
        return None
    content: JsonObject = event["content"]
    event_id, sender = event.get("event_id"), event.get("sender")
    msgtype = content.get("msgtype")
    if not isinstance(event_id, str) or not isinstance(sender, str) or not isinstance(msgtype, str):
        return None
    if msgtype == "m.notice":
        return None
    relation = content.get("m.relates_to") if isinstance(content.get("m.relates_to"), dict) else {}
    assert isinstance(relation, dict)
    if relation.get("rel_type") == "m.replace":
        return None  # an edit of an earlier message: that one was answered
    thread = relation.get("event_id") if relation.get("rel_type") == "m.thread" else None
    in_reply = relation.get("m.in_reply_to")
    reply_to = in_reply.get("event_id") if isinstance(in_reply, dict) else None
    body = content.get("body")
    text = body[:MAX_TEXT_CHARS] if isinstance(body, str) else ""
    media = None
    kind = _MEDIA.get(msgtype)
    if kind is not None:
        info = content.get("info") if isinstance(content.get("info"), dict) else {}
        assert isinstance(info, dict)
        if kind == "audio" and "org.matrix.msc3245.voice" in content:
            kind = "voice"
        size = info.get("size")
        url = content.get("url")
        media = Media(
            kind=kind,
            ref=url if isinstance(url, str) else "",
            name=str(content.get("filename") or text or "file")[:200],
            mime=str(info.get("mimetype") or ""),
            size=size if isinstance(size, int) and not isinstance(size, bool) else None,
        )
        caption = content.get("filename") and text != content.get("filename")
        text = text if caption else ""
    mentions = content.get("m.mentions") if isinstance(content.get("m.mentions"), dict) else {}
    assert isinstance(mentions, dict)
    user_ids = mentions.get("user_ids") if isinstance(mentions.get("user_ids"), list) else []
    assert isinstance(user_ids, list)
    localpart = bot.split(":", 1)[0].lstrip("@").lower()
    mentioned = bot in user_ids or bot in text or (bool(localpart) and localpart in text.lower())
    return MatrixMessage(
        room_id=room_id,
        event_id=event_id,
        sender=sender,
        msgtype=msgtype,
        text=text,
        thread=thread if isinstance(thread, str) else None,
        direct=direct,
        media=media,
        reply_to=reply_to if isinstance(reply_to, str) else None,
        mentions_bot=mentioned,
    )


def is_command(msg: MatrixMessage) -> bool:
    return msg.media is None and msg.text.startswith("/")
