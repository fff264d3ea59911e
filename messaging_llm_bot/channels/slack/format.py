"""A reply's Markdown as Slack's mrkdwn, split to its limit, and what the channel can do.

Slack styles text with ``*bold*``, ``_italic_``, ``~strike~``, `` `code` `` and ```` ```pre``` ````, and links as
``<url|text>``; ``&``, ``<`` and ``>`` in the text are escaped (``&amp;``, ``&lt;``, ``&gt;``) so a reply cannot
mention ``<!channel>`` or a user. Slack truncates a message past 40,000 characters and advises 4,000: a longer
reply is split there, on paragraph, line and word boundaries.
"""

from __future__ import annotations

from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.markup import Entity, plain_parts, with_markers

MAX_TEXT_CHARS = 4000
#: The largest file taken in or sent (Slack takes up to 1 GB; a turn reads a file whole).
MAX_FILE_BYTES = 50 * 1024 * 1024

#: What the Slack channel can do (channels/contract.py).
CAPABILITIES = Capabilities(
    max_message_length=MAX_TEXT_CHARS,
    length_unit="chars",
    can_edit=True,  # chat.update: a streamed answer grows in one message
    typing=False,  # the Events API's bots have no typing indicator
    threads=True,  # a thread (thread_ts) is a conversation of its own
    groups=True,  # channels, in mention mode
    buttons=True,  # an ``ask`` question has Block Kit buttons (buttons.py); a yes or no reply answers it too
    media_in=frozenset({"photo", "file"}),  # a file_share message: pictures go to a runner that sees them
    media_out=frozenset({"photo", "file"}),  # shared as files (files.getUploadURLExternal ...)
    max_file_bytes=MAX_FILE_BYTES,
)

_MARKERS = {"bold": "*", "italic": "_", "strikethrough": "~", "code": "`", "pre": "```"}
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape(text: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def _markers(entity: Entity) -> tuple[str, str] | None:
    kind = entity.get("type")
    if kind == "text_link":
        url = str(entity.get("url", "")).replace("|", "%7C").replace(">", "%3E")
        return f"<{url}|", ">"
    marker = _MARKERS.get(str(kind))
    return (marker, marker) if marker else None


def slack_text(markdown: str) -> str:
    """The Markdown as Slack's mrkdwn: its styles as Slack's markers, the text escaped."""
    shown = with_markers(markdown, _markers, lambda ch: _ESCAPES.get(ch, ch))
    return escape(markdown) if shown is markdown else shown


def split(markdown: str) -> list[str]:
    """The reply as Slack messages of at most 4,000 characters each (never an empty one)."""
    return plain_parts(slack_text(markdown), MAX_TEXT_CHARS, lambda _ch: 1)
