"""What the web chat can do (the contract's ``Capabilities``) and how a reply is split to its limit."""

from __future__ import annotations

from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.markup import plain_parts, terminal_text

#: The owner's one conversation on the page: its history and memory scope (the prefix is the registry's).
CONVERSATION = "web:owner"

CAPABILITIES = Capabilities(
    max_message_length=16_000,  # a bubble on the page; a longer reply is split, nothing is lost
    length_unit="chars",
    can_edit=False,  # the answer streams in as live text, then arrives once as the message
    typing=True,
    buttons=True,  # an ``ask`` approval is answered with Yes / No buttons
    media_in=frozenset({"photo", "file"}),  # up to the web server's body bound (web.max_body_bytes)
    media_out=frozenset({"photo", "file"}),
    max_file_bytes=50 * 1024 * 1024,  # the page downloads it from the workspace: only a bound on a runaway
)


def split(markdown: str) -> list[str]:
    """The reply as the page shows it (text, set as text: never HTML) in parts of at most
    ``max_message_length`` characters."""
    return plain_parts(terminal_text(markdown), CAPABILITIES.max_message_length, lambda _ch: 1)
