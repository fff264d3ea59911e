"""A reply as Discord messages, and what the channel can do.

Discord shows Markdown itself (bold, italics, code, links), so the model's Markdown is sent as it is; mentions in
it ping no one (every send says ``allowed_mentions`` none). A message holds 2,000 characters: a longer reply is
split on paragraph, line and word boundaries, a fenced code block cut in two closed and reopened.
"""

from __future__ import annotations

from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.markup import plain_parts

MAX_TEXT_CHARS = 2000
MAX_FILE_BYTES = 10 * 1024 * 1024  # Discord's upload limit without boosts

#: What the Discord channel can do (channels/contract.py).
CAPABILITIES = Capabilities(
    max_message_length=MAX_TEXT_CHARS,
    length_unit="chars",
    can_edit=True,  # a streamed answer grows in one message by edits
    typing=True,
    threads=True,  # a thread is a channel, its own conversation
    groups=True,  # guild channels, in mention mode
    buttons=True,  # an ``ask`` question has Yes and No buttons (a reply yes or no answers too)
    media_in=frozenset({"photo", "file"}),  # attachments: pictures go to a runner that sees them
    media_out=frozenset({"photo", "file"}),  # sent as attachments
    max_file_bytes=MAX_FILE_BYTES,
)


def split(markdown: str) -> list[str]:
    """The reply as Discord messages of at most 2,000 characters each (never an empty one)."""
    return plain_parts(markdown, MAX_TEXT_CHARS, lambda _ch: 1)
