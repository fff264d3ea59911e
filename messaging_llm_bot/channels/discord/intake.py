"""What comes in through the gateway, in order for each message: the bot's own and other bots' messages, and a
guild message without the bot's mention, passed over (message.py); the allowlist (a stranger gets a pairing code
in their DM at most once an hour, or their user id once with pairing off; nothing of theirs is stored or reaches
the model; in a guild they get nothing); the answer to an open yes/no question; then the durable inbox (the
message id taken once: a gateway RESUME may deliver a message again); then the message joins the sender's running
turn by the busy mode (conversation/busy.py), or a turn in the conversation's queue.

Nothing is lost when the inbox cannot store (the disk full or read-only): the gateway never delivers a message
again in a new session, so the message is held in memory and storing is tried again with a growing pause, its
chat told once (conversation/held.py); the messages behind it wait, one at a time in the gateway's order. The
channel's cursor (catchup.py) moves past a message only once it is handled, so one a stop or a crash took while
it was held is read again from the channel's history at the next start.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING, Protocol

from assistant_framework.config.settings import DiscordSettings
from messaging_llm_bot.channels.contract import Address
from messaging_llm_bot.channels.discord.catchup import MAX_CHANNELS, HistoryCursor, allowed_dms, catch_up
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
        # Held while the inbox cannot store (the gateway would not send it again), its chat told once.
        self.intake = host.channel_intake(host.turns, hold=True, lost=_lost)
        self.cursor = HistoryCursor(host.runtime.workspace)
        self.order = asyncio.Lock()  # one message at a time, in the gateway's order (a held one holds the rest)

    async def take(self, message: discord.Message) -> bool:
        """discord.py's ``on_message``: the message, if it is the bot's business. False: a stop came while it
        was held (not noted as handled: the next start reads it from the history)."""
        async with self.order:
            return await self.take_in_order(message)

    async def take_in_order(self, message: discord.Message) -> bool:
        """``take`` inside ``order`` (the catch-up holds it for a channel's history)."""
        user = self.host.channel.client.user
        msg = message_of(message, user.id if user is not None else 0)
        channel = str(message.channel.id)
        if msg is None:
            log.debug("discord: message %s passed over (not addressed to the bot)", message.id)
            if self.cursor.known(channel):
                self.cursor.note(channel, message.id, self.cursor.marks[channel].direct)
            return True
        if not await self.on_message(msg):
            return False
        self.cursor.note(channel, msg.message_id, msg.direct)
        return True

    async def catch_up(self) -> None:
        """What a new gateway session did not deliver, read from the known channels' and the allowed users' DMs'
        history (catchup.py)."""
        client = self.host.channel.client
        dms = await allowed_dms(client, self.host.config.allowed_ids[:MAX_CHANNELS])
        await catch_up(client, self.cursor, self.take_in_order, self.order, lambda: self.host.stopping, dms)

    async def on_message(self, msg: DiscordMessage) -> bool:
        """True when the message is handled (False: a stop came while it was held)."""
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
            return True
        owner = config.is_owner(msg.user)
        if owner and msg.direct and host.channel.approvals.resolve(msg.conversation, msg.text):
            return True  # the answer to an open yes/no question, not a new message
        say = functools.partial(host.turns.say, to)
        # No slash commands are registered: Discord sends a /command typed in a DM as text.
        command = msg.direct and msg.text.startswith("/") and len(msg.text) > 1
        decline = functools.partial(host.channel.approvals.questions.decline_all, msg.conversation)
        arrival = Arrival(
            msg.key, msg.conversation, msg.to_payload(), msg.user, owner, msg.text, msg.message_id, joinable(msg)
        )
        return await self.intake.message(arrival, say, command=command, owner_data=owner, decline=decline)


def _lost(arrival: Arrival) -> None:
    log.warning(
        "discord: message %s from %s was held (the inbox could not store it) when the channel stopped: the next "
        "start reads it again from its channel's history",
        arrival.message_id,
        arrival.sender,
    )
