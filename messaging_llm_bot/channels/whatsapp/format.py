"""A reply's Markdown as WhatsApp text, split to its limit, and what the channel can do.

WhatsApp styles text with its own markers (``*bold*``, ``_italic_``, ``~strike~``, ```` ```code``` ````); the
model's Markdown is converted to plain text and style ranges (conversation/markup.py) and the ranges written
back as those markers, a link followed by its address. A text message holds 4,096 characters; a longer reply
is split on paragraph, line and word boundaries.
"""

from __future__ import annotations

from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.markup import Entity, plain_parts, with_markers

MAX_TEXT_CHARS = 4096

#: What the WhatsApp channel can do (channels/contract.py).
CAPABILITIES = Capabilities(
    max_message_length=MAX_TEXT_CHARS,
    length_unit="chars",
    can_edit=False,  # a sent message cannot be edited through the API: the answer goes out when it is done
    typing=True,  # the read receipt's typing indicator
    groups=False,  # the Cloud API has one-to-one chats only
    buttons=False,  # an ``ask`` question is answered by replying yes or no
    media_in=frozenset({"photo", "file", "voice", "audio"}),
    media_out=frozenset({"photo", "file", "voice", "audio"}),
    max_file_bytes=100 * 1024 * 1024,  # a document; a picture may have 5 MB, audio 16 MB (channel.py)
)

_MARKERS = {"bold": "*", "italic": "_", "strikethrough": "~", "code": "`", "pre": "```"}


def whatsapp_text(markdown: str) -> str:
    """The Markdown as WhatsApp shows it: its styles as WhatsApp's markers, links with their address."""
    return with_markers(markdown, _markers)


def _markers(entity: Entity) -> tuple[str, str] | None:
    kind = entity.get("type")
    if kind == "text_link":
        return "", f" ({entity.get('url', '')})"
    marker = _MARKERS.get(str(kind))
    return (marker, marker) if marker else None


def split(markdown: str) -> list[str]:
    """The reply as WhatsApp text messages of at most 4,096 characters each (never an empty one)."""
    return plain_parts(whatsapp_text(markdown), MAX_TEXT_CHARS, lambda _ch: 1)
