"""Model Markdown as Matrix ``m.text`` content: the plain ``body`` and a sanitized ``formatted_body``.

The HTML is built from the converter's entities (conversation/markup.py), never from the model's text: every
character of the text is escaped and only the tags below are written, so a reply cannot inject markup
(``<img>``, ``<script>``, an attribute) whatever it holds. Links keep only http(s) and mailto targets.
A body is at most ``MAX_BODY_BYTES`` UTF-8 bytes: with its HTML the event stays well under the homeserver's
65,536-byte event limit; an event whose HTML would still not fit goes as plain text.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.markup import EMPTY_PLACEHOLDER, Entity, render_parts, utf8_bytes

MAX_BODY_BYTES = 8_000
MAX_EVENT_BYTES = 60_000  # the spec's 65,536 for the whole event, less its envelope
HTML_FORMAT = "org.matrix.custom.html"

#: What the Matrix channel can do (channels/contract.py); replies are split by ``render_matrix``.
CAPABILITIES = Capabilities(
    max_message_length=MAX_BODY_BYTES,
    length_unit="utf8",
    can_edit=True,  # m.replace: a streamed reply grows in one message
    typing=True,
    threads=True,  # m.thread: a thread is a conversation of its own
    groups=True,
    buttons=False,  # approvals are answered by a reply "yes" / "no"
    media_in=frozenset({"photo", "file", "audio", "voice"}),
    media_out=frozenset({"photo", "file", "audio", "voice"}),
    max_file_bytes=50 * 1024 * 1024,  # Synapse's default max_upload_size
)

_TAGS: dict[str, tuple[str, str]] = {
    "bold": ("<strong>", "</strong>"),
    "italic": ("<em>", "</em>"),
    "underline": ("<u>", "</u>"),
    "strikethrough": ("<del>", "</del>"),
    "spoiler": ("<span data-mx-spoiler>", "</span>"),
    "code": ("<code>", "</code>"),
    "blockquote": ("<blockquote>", "</blockquote>"),
}
_SAFE_SCHEMES = ("http://", "https://", "mailto:")


class InReplyTo(TypedDict):
    event_id: str


#: ``m.relates_to`` of a message the channel sends: an edit (``m.replace``), a thread (``m.thread``), a reply.
Relation = TypedDict(
    "Relation",
    {
        "rel_type": NotRequired[str],
        "event_id": NotRequired[str],
        "is_falling_back": NotRequired[bool],
        "m.in_reply_to": NotRequired[InReplyTo],
    },
)


class FileInfo(TypedDict):
    mimetype: str
    size: int


class VoiceMark(TypedDict):
    """MSC3245's empty object that makes an audio file a voice message."""


class NewContent(TypedDict):
    """An edit's new text (``m.new_content``)."""

    msgtype: str
    body: str
    format: NotRequired[str]
    formatted_body: NotRequired[str]


#: The ``m.room.message`` content the channel sends: a text (with its HTML), a file, an edit, in a thread.
MessageContent = TypedDict(
    "MessageContent",
    {
        "msgtype": str,
        "body": str,
        "format": NotRequired[str],
        "formatted_body": NotRequired[str],
        "filename": NotRequired[str],
        "url": NotRequired[str],
        "info": NotRequired[FileInfo],
        "org.matrix.msc3245.voice": NotRequired[VoiceMark],
        "m.new_content": NotRequired[NewContent],
        "m.relates_to": NotRequired[Relation],
    },
)


@dataclass(frozen=True)
class MatrixPart:
    """One message: its plain body and its HTML (None when the text has no formatting)."""

    body: str
    html: str | None = None


def _open_close(entity: Entity) -> tuple[str, str] | None:
    kind = entity.get("type")
    if kind == "pre":
        language = "".join(ch for ch in str(entity.get("language") or "") if ch.isalnum() or ch in "+-_")[:30]
        cls = f' class="language-{language}"' if language else ""
        return f"<pre><code{cls}>", "</code></pre>"
    if kind == "text_link":
        url = str(entity.get("url") or "")
        if not url.lower().startswith(_SAFE_SCHEMES):
            return None
        return f'<a href="{html.escape(url, quote=True)}">', "</a>"
    return _TAGS.get(str(kind))


def html_of(text: str, entities: list[Entity]) -> str | None:
    """The HTML of ``text`` with its entities (offsets in UTF-16 units); None when nothing is formatted."""
    spans = []
    for entity in entities:
        tags = _open_close(entity)
        if tags is not None and int(entity.get("length") or 0) > 0:
            start = int(entity["offset"])
            spans.append((start, start + int(entity["length"]), tags, entity.get("type") == "pre"))
    if not spans:
        return None
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[str] = []
    stack: list[tuple[int, str, bool]] = []  # (end, closing tag, inside pre)
    pos16 = 0
    index = 0

    def close_until(at: int) -> None:
        while stack and stack[-1][0] <= at:
            out.append(stack.pop()[1])

    for ch in text:
        close_until(pos16)
        while index < len(spans) and spans[index][0] <= pos16:
            start, end, (opening, closing), pre = spans[index]
            index += 1
            if stack and end > stack[-1][0]:  # overlaps its parent: cut at the parent's end (stays well formed)
                end = stack[-1][0]
            out.append(opening)
            stack.append((end, closing, pre))
        in_pre = any(one[2] for one in stack)
        out.append("<br>" if ch == "\n" and not in_pre else html.escape(ch, quote=False))
        pos16 += 2 if ord(ch) > 0xFFFF else 1
    close_until(1 << 60)
    return "".join(out)


def render_matrix(markdown: str, limit: int = MAX_BODY_BYTES) -> list[MatrixPart]:
    """Render Markdown to parts of at most ``limit`` UTF-8 bytes of body each; never an empty list."""
    parts = [MatrixPart(p.text, html_of(p.text, p.entities)) for p in render_parts(markdown, limit, utf8_bytes)]
    return [p for p in parts if p.body.strip()] or [MatrixPart(EMPTY_PLACEHOLDER)]


def text_content(part: MatrixPart, msgtype: str = "m.text") -> MessageContent:
    """The ``m.room.message`` content of one part; plain only when its HTML would not fit in an event."""
    content: MessageContent = {"msgtype": msgtype, "body": part.body}
    if part.html is not None:
        with_html = content.copy()
        with_html["format"] = HTML_FORMAT
        with_html["formatted_body"] = part.html
        if len(json.dumps(with_html, ensure_ascii=False).encode("utf-8")) <= MAX_EVENT_BYTES:
            return with_html
    return content


def edit_content(event_id: str, part: MatrixPart) -> MessageContent:
    """An ``m.replace`` edit of ``event_id`` to ``part`` (clients without edits show the ``* `` fallback)."""
    new = text_content(part)
    fallback = new.copy()
    fallback["body"] = f"* {new['body']}"
    if "formatted_body" in new:
        fallback["formatted_body"] = f"* {new['formatted_body']}"
    fallback["m.new_content"] = new
    fallback["m.relates_to"] = {"rel_type": "m.replace", "event_id": event_id}
    return fallback
