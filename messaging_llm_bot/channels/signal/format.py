"""Model Markdown as a Signal message: plain text plus ``textStyle`` ranges, in parts Signal sends inline.

Signal styles are ``"start:length:STYLE"`` in UTF-16 code units (BOLD, ITALIC, STRIKETHROUGH,
MONOSPACE, SPOILER). Signal has no link entity, so ``[label](url)`` becomes ``label (url)``.
signal-cli turns a body over 2000 UTF-8 bytes into a truncated message plus a long-text
attachment, so replies are split below that on paragraph, line, sentence and word boundaries.
"""

from __future__ import annotations

from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.markup import Entity, MessagePart, render_parts, utf8_bytes

MAX_MESSAGE_BYTES = 2000  # signal-cli ServiceConfig.MAX_MESSAGE_SIZE_BYTES

#: What the Signal channel can do (channels/contract.py); its replies are split by ``render_signal``.
CAPABILITIES = Capabilities(
    max_message_length=MAX_MESSAGE_BYTES,
    length_unit="utf8",
    can_edit=False,  # a reply is sent whole when the turn ends
    typing=True,
    groups=True,
    buttons=False,  # approvals are answered by a reply "yes" / "no" (signal/send.py)
    media_in=frozenset({"photo", "file", "voice"}),
    media_out=frozenset({"voice", "photo", "file"}),
    max_file_bytes=100 * 1024 * 1024,  # Signal's attachment limit
)
STYLE_OF = {
    "bold": "BOLD",
    "italic": "ITALIC",
    "strikethrough": "STRIKETHROUGH",
    "spoiler": "SPOILER",
    "code": "MONOSPACE",
    "pre": "MONOSPACE",
}


def styles_of(entities: list[Entity]) -> list[str]:
    """Signal ``textStyle`` strings for the entities that have a Signal style."""
    out = []
    for ent in entities:
        style = STYLE_OF.get(str(ent.get("type")))
        if style and ent["length"] > 0:
            item = f"{ent['offset']}:{ent['length']}:{style}"
            if item not in out:
                out.append(item)
    return out


def render_signal(markdown: str, limit: int = MAX_MESSAGE_BYTES) -> list[MessagePart]:
    """Render Markdown to parts of at most ``limit`` UTF-8 bytes (their styles: ``styles_of``); never an empty part."""
    return render_parts(markdown, limit, utf8_bytes, links_inline=True)
