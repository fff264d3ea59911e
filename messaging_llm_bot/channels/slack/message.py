"""A message the Events API delivers, as the channel keeps it in the durable inbox.

Taken: a ``message`` event in a DM (``channel_type: im``), a ``file_share`` one too (its files, at most
``MAX_FILES``, fetched when the turn runs), and an ``app_mention`` in a channel (mention mode: a channel's other
messages are not the bot's business). Passed over: the bot's own and other bots' messages, edits, deletions and
every other ``subtype``, and anything without a user, a channel or a ts.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from assistant_framework.inbox.item import InboxPayload
from assistant_framework.json_types import JsonObject
from messaging_llm_bot.channels.slack.settings import conversation_of

_MENTION = re.compile(r"<@[UW][A-Z0-9]+>\s*")
#: Files read of one message (Slack lets a message carry ten).
MAX_FILES = 10


@dataclass(frozen=True)
class SlackFile:
    """A file shared with a message: fetched from ``url`` (``url_private``) with the bot token."""

    file_id: str
    name: str
    mimetype: str
    size: int
    url: str


def files_of(event: JsonObject) -> tuple[SlackFile, ...]:
    """The hosted files of a message event (an external link or a deleted file has no ``url_private``)."""
    found = []
    for one in event.get("files") or []:
        if not isinstance(one, dict) or not isinstance(one.get("url_private"), str) or not one.get("id"):
            continue
        size = one.get("size")
        found.append(
            SlackFile(
                str(one["id"])[:40],
                str(one.get("name") or one.get("title") or one["id"])[:200],
                str(one.get("mimetype") or ""),
                size if isinstance(size, int) and size >= 0 else 0,
                one["url_private"],
            )
        )
    return tuple(found[:MAX_FILES])


@dataclass(frozen=True)
class SlackMessage:
    event_id: str  # the Events API's id of the delivery: a retry has the same one
    user: str
    channel: str
    ts: str
    text: str
    thread_ts: str | None  # the thread the message is in (its root's ts), or None
    direct: bool  # a DM (the owner's chat when the owner wrote it)
    files: tuple[SlackFile, ...] = ()

    @property
    def conversation(self) -> str:
        return conversation_of(self.channel, self.thread_ts)

    @property
    def reply_thread(self) -> str | None:
        """Where the answer goes: the message's thread; in a channel, a thread under the mention."""
        return self.thread_ts or (None if self.direct else self.ts)

    def to_payload(self) -> InboxPayload:
        return {"slack": asdict(self)}


def unescape(text: str) -> str:
    """A text as typed: Slack sends ``&``, ``<`` and ``>`` escaped."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def message_of_payload(payload: object) -> SlackMessage | None:
    """The message an inbox item holds (``to_payload``), or None."""
    data = payload.get("slack") if isinstance(payload, dict) else None
    if not isinstance(data, dict):
        return None
    try:
        files = tuple(SlackFile(**one) for one in data.get("files") or ())
        return SlackMessage(**(data | {"files": files}))
    except TypeError:
        return None


def message_of_event(payload: object, bot_user: str) -> SlackMessage | None:
    """The message of an ``event_callback`` payload the bot answers, or None (see the module's docstring)."""
    if not isinstance(payload, dict) or payload.get("type") != "event_callback":
        return None
    event = payload.get("event")
    if not isinstance(event, dict) or event.get("subtype") not in (None, "file_share") or event.get("bot_id"):
        return None
    kind = event.get("type")
    direct = kind == "message" and event.get("channel_type") == "im"
    if not (direct or kind == "app_mention"):
        return None
    fields = [event.get(k) for k in ("user", "channel", "ts")]
    event_id = payload.get("event_id")
    if not all(isinstance(f, str) and f for f in fields) or not isinstance(event_id, str) or fields[0] == bot_user:
        return None
    user, channel, ts = (str(f) for f in fields)
    text = str(event.get("text") or "")
    if kind == "app_mention":
        text = _MENTION.sub("", text, count=1)
    text = unescape(text)
    thread = event.get("thread_ts")
    thread_ts = thread if isinstance(thread, str) else None
    return SlackMessage(event_id, user, channel, ts, text.strip(), thread_ts, direct, files_of(event))
