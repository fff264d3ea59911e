"""A message the gateway delivers, as the channel keeps it in the durable inbox.

Taken: a person's message in a DM with the bot, and in a guild channel or thread one that mentions the bot
(mention mode: a channel's other messages are not the bot's business). Passed over: the bot's own and other bots'
messages, system messages (joins, pins), and a guild message without the bot's mention.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from assistant_framework.inbox.item import InboxPayload
from messaging_llm_bot.channels.discord.settings import conversation_of

if TYPE_CHECKING:
    import discord

#: The inbox's key of a message: its id, once (a gateway RESUME may deliver it again).
KEY_PREFIX = "discord:"
MAX_FILES = 10  # Discord's own bound of attachments a message


@dataclass(frozen=True)
class DiscordFile:
    """An attachment as Discord describes it; fetched from ``url`` when the turn runs (channels/discord/files.py)."""

    attachment_id: str
    name: str
    url: str
    size: int
    content_type: str


@dataclass(frozen=True)
class DiscordMessage:
    message_id: str
    user: str
    channel: str  # the DM, guild channel or thread it was written in
    text: str
    direct: bool  # a DM (the owner's chat when the owner wrote it)
    files: tuple[DiscordFile, ...] = ()

    @property
    def key(self) -> str:
        return f"{KEY_PREFIX}{self.message_id}"

    @property
    def conversation(self) -> str:
        return conversation_of(self.channel)

    def to_payload(self) -> InboxPayload:
        return {"discord": asdict(self)}


def message_of_payload(payload: object) -> DiscordMessage | None:
    """The message an inbox item holds (``to_payload``), or None."""
    data = payload.get("discord") if isinstance(payload, dict) else None
    if not isinstance(data, dict):
        return None
    try:
        files = tuple(DiscordFile(**one) for one in data.get("files") or ())
        return DiscordMessage(**{**data, "files": files})
    except TypeError:
        return None


def message_of(message: discord.Message, bot_id: int) -> DiscordMessage | None:
    """The message the bot answers, or None (see the module's docstring)."""
    import discord

    if (
        message.author.bot
        or message.author.id == bot_id
        or message.type
        not in (
            discord.MessageType.default,
            discord.MessageType.reply,
        )
    ):
        return None
    # A DM: a DMChannel from the gateway, a partial channel of the private type from the history (catchup.py).
    direct = isinstance(message.channel, discord.DMChannel) or message.channel.type == discord.ChannelType.private
    text = message.content
    if not direct:
        if not any(user.id == bot_id for user in message.mentions):
            return None
        text = re.sub(rf"<@!?{bot_id}>", "", text)
    files = tuple(
        DiscordFile(str(a.id), a.filename, a.url, a.size, a.content_type or "") for a in message.attachments[:MAX_FILES]
    )
    return DiscordMessage(str(message.id), str(message.author.id), str(message.channel.id), text.strip(), direct, files)
