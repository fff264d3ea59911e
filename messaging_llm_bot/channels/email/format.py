"""A reply's Markdown as a mail: the plain text part and the HTML part, and what the channel can do.

A mail has no length limit worth splitting at, cannot be edited once sent and shows no typing; its
conversations are threads (``In-Reply-To``/``References``). The HTML is made from the converter's
entities (conversation/markup.py) over escaped text, so nothing of the model's output becomes markup
but bold, italics, code and links whose address is http(s) or mailto.
"""

from __future__ import annotations

import html

from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.markup import Entity, markdown_entities, terminal_text, utf16_units

#: A mail is one part: the limit only guards against a runaway reply (a million characters).
MAX_MAIL_CHARS = 1_000_000

#: What the email channel can do (channels/contract.py).
CAPABILITIES = Capabilities(
    max_message_length=MAX_MAIL_CHARS,
    length_unit="chars",
    can_edit=False,  # a sent mail stays as sent: the reply goes out whole when the turn ends
    typing=False,
    threads=True,  # one conversation per mail thread
    groups=False,
    buttons=False,  # an ``ask`` question is answered by replying yes or no (email/approval.py)
    media_in=frozenset({"photo", "file"}),
    media_out=frozenset({"photo", "file"}),
    # Providers take about 25 MB a mail; an attachment grows by a third in base64.
    max_file_bytes=15_000_000,
)

_TAGS = {"bold": "b", "italic": "i", "underline": "u", "strikethrough": "s", "code": "code", "pre": "pre"}
_SAFE_SCHEMES = ("http://", "https://", "mailto:")


def plain_text(markdown: str) -> str:
    """The reply as the plain text part: the Markdown's text without its markup, links with their address."""
    return terminal_text(markdown)[:MAX_MAIL_CHARS]


def html_body(markdown: str) -> str:
    """The reply as an HTML document: escaped text, the Markdown's styles as tags, line breaks kept."""
    converted = markdown_entities(markdown)
    if converted is None:
        text, entities = markdown, list[Entity]()
    else:
        text, entities = converted
    opens: dict[int, list[str]] = {}
    closes: dict[int, list[str]] = {}
    for entity in sorted(entities, key=lambda e: (e["offset"], -e["length"])):
        start, end = entity["offset"], entity["offset"] + entity["length"]
        tag = _open_close(entity)
        if tag is None:
            continue
        opens.setdefault(start, []).append(tag[0])
        closes.setdefault(end, []).insert(0, tag[1])  # the inner one, opened later, closes first
    out: list[str] = []
    units = 0
    for ch in text:
        out += closes.pop(units, [])
        out += opens.pop(units, [])
        out.append("<br>\n" if ch == "\n" else html.escape(ch))
        units += utf16_units(ch)
    out += closes.pop(units, [])
    body = "".join(out)
    return f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n<div>{body}</div>\n</body></html>\n'


def _open_close(entity: Entity) -> tuple[str, str] | None:
    kind = entity.get("type")
    if kind == "text_link":
        url = str(entity.get("url") or "")
        if not url.lower().startswith(_SAFE_SCHEMES):
            return None  # javascript: and the like stay text
        return f'<a href="{html.escape(url, quote=True)}">', "</a>"
    name = _TAGS.get(str(kind))
    return (f"<{name}>", f"</{name}>") if name else None
