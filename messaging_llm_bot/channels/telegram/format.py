"""Model Markdown as Bot API text and entities, in parts of 4096 UTF-16 units (the rules: conversation/markup.py)."""

from __future__ import annotations

from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.markup import MessagePart, render_parts, utf16_units
from messaging_llm_bot.conversation.markup import plain_parts as _plain_parts

MAX_MESSAGE_UTF16 = 4096

#: What the Telegram channel can do (channels/contract.py); its replies are split by ``render_markdown``.
CAPABILITIES = Capabilities(
    max_message_length=MAX_MESSAGE_UTF16,
    length_unit="utf16",
    can_edit=True,  # a streamed reply grows in one message (conversation/progress.py)
    typing=True,
    threads=True,  # forum topics
    groups=True,
    buttons=True,  # approvals are Yes/No buttons (telegram/approval.py)
    media_in=frozenset({"photo", "file", "voice"}),
    media_out=frozenset({"voice", "photo", "file"}),
    max_file_bytes=50_000_000,  # the Bot API's upload limit for sendDocument (sendPhoto: 10 MB, else a document)
)


def render_markdown(markdown: str, limit: int = MAX_MESSAGE_UTF16) -> list[MessagePart]:
    """Render Markdown to parts of at most ``limit`` UTF-16 units each; never returns an empty part."""
    return render_parts(markdown, limit, utf16_units)


def plain_parts(text: str, limit: int = MAX_MESSAGE_UTF16) -> list[str]:
    """Split plain text on paragraph/line/word boundaries; fenced code cut in two is closed and reopened."""
    return _plain_parts(text, limit, utf16_units)
