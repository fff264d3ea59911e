"""What comes in through the gateway, in order for each message: the bot's own and other bots' messages, and a
guild message without the bot's mention, passed over (message.py); the allowlist (a stranger gets a pairing code
in their DM at most once an hour, or their user id once with pairing off; nothing of theirs is stored or reaches
the model; in a guild they get nothing); the answer to an open yes/no question; then the durable inbox (the
message id taken once: a gateway RESUME may deliver a message again); then the message joins the sender's running
turn by the busy mode (conversation/busy.py), or a turn in the conversation's queue.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Protocol

from assistant_framework.config.settings import DiscordSettings
from messaging_llm_bot.channels.contract import Address
from messaging_llm_bot.channels.discord.channel import DiscordChannel
from messaging_llm_bot.channels.discord.message import DiscordMessage, message_of
from messaging_llm_bot.channels.discord.turn import DiscordTurns, joinable
from messaging_llm_bot.conversation.intake import Arrival
from messaging_llm_bot.conversation.service import ChannelHost
from messaging_llm_bot.conversation.strangers import Strangers
from messaging_llm_bot.conversation.strangers import refusal_text as not_allowed

if TYPE_CHECKING:
    import discord

log = logging.getLogger(__name__)


class DiscordIntakeHost(ChannelHost, Protocol):
    """What the intake uses of the running service (service.py)."""

    channel: DiscordChannel
    turns: DiscordTurns

    @property
    def config(self) -> DiscordSettings: ...


class DiscordIntake:
    def __init__(self, host: DiscordIntakeHost) -> None:
        self.host = host
        # A pairing code at most once an hour; with pairing off, their user id once, ever (loaded at the start).
        self.strangers = Strangers.told_once(host.runtime, "discord")
        self.intake = host.channel_intake(host.turns)

    async def take(self, message: discord.Message) -> None:
        """discord.py's ``on_message``: the message, if it is the bot's business."""
        user = self.host.channel.client.user
        msg = message_of(message, user.id if user is not None else 0)
        if msg is None:
            log.debug("discord: message %s passed over (not addressed to the bot)", message.id)
            return
        await self.on_message(msg)

    async def on_message(self, msg: DiscordMessage) -> None:
        host = self.host
        config = host.config
        to = Address(msg.channel)
        if not config.allows(msg.user):
            await self.strangers.answer(
                msg.user,
                not_allowed(f"Your Discord user id is {msg.user}", "discord.allowed"),
                lambda text: host.turns.say(to, text),
                private=msg.direct,
                addressed=True,
            )
            return
        owner = config.is_owner(msg.user)
        if owner and msg.direct and host.channel.approvals.resolve(msg.conversation, msg.text):
            return  # the answer to an open yes/no question, not a new message
        say = functools.partial(host.turns.say, to)
        if msg.direct and msg.text.startswith("/") and len(msg.text) > 1:
            # No slash commands are registered: Discord sends a /command typed in a DM as text.
            decline = functools.partial(host.channel.approvals.questions.decline_all, msg.conversation)
            await self.intake.command(msg.text, msg.conversation, say, owner=owner, owner_data=owner, decline=decline)
            return
        arrival = Arrival(
            msg.key, msg.conversation, msg.to_payload(), msg.user, owner, msg.text, msg.message_id, joinable(msg)
        )
        await self.intake.take(arrival, say)
