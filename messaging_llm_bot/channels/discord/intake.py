"""What comes in through the gateway, in order for each message: the bot's own and other bots' messages, and a
guild message without the bot's mention, passed over (message.py); the allowlist (a stranger gets a pairing code
in their DM at most once an hour, or their user id once with pairing off; nothing of theirs is stored or reaches
the model; in a guild they get nothing); the answer to an open yes/no question; then the durable inbox (the
message id taken once: a gateway RESUME may deliver a message again); then the message joins the sender's running
turn by the busy mode (conversation/busy.py), or a turn in the conversation's queue.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from assistant_framework.inbox import Inbox
from messaging_llm_bot.channels.contract import Address
from messaging_llm_bot.channels.discord.channel import DiscordChannel
from messaging_llm_bot.channels.discord.message import DiscordMessage, message_of
from messaging_llm_bot.channels.discord.settings import DiscordConfig
from messaging_llm_bot.channels.discord.turn import TurnRunner, joinable
from messaging_llm_bot.conversation import commands as texts
from messaging_llm_bot.conversation.chatqueue import ChatQueues
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.held import StorageOutage
from messaging_llm_bot.conversation.intake import Arrival, ChannelIntake
from messaging_llm_bot.conversation.pairing import Pairing
from messaging_llm_bot.conversation.strangers import Strangers, ToldOnce

if TYPE_CHECKING:
    import discord

log = logging.getLogger(__name__)

STRANGERS_FILE = "state/discord/strangers_told.txt"


def stranger_text(user: str) -> str:
    return (
        f"Sorry, you are not authorised to use this assistant. Your Discord user id is {user}; "
        "the owner can add it to discord.allowed."
    )


class IntakeHost(Protocol):
    """What the intake uses of the running service (service.py)."""

    runtime: Any
    inbox: Inbox
    channel: DiscordChannel
    turns: TurnRunner
    queues: ChatQueues
    tasks: ChatTasks
    storage: StorageOutage

    @property
    def config(self) -> DiscordConfig: ...


class Intake:
    def __init__(self, host: IntakeHost) -> None:
        self.host = host
        # A pairing code at most once an hour (conversation/pairing.py); with pairing off, their user id once,
        # ever (a line each in the workspace, loaded at the service's start: ``load``).
        told = ToldOnce(host.runtime.workspace, STRANGERS_FILE)
        self.strangers = Strangers("discord", told, Pairing(host.runtime))
        self.intake = ChannelIntake(host.turns, host.queues, host.tasks, host.storage)

    async def load(self) -> None:
        told = self.strangers.told
        assert isinstance(told, ToldOnce)
        await told.load()

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
                stranger_text(msg.user),
                lambda text: host.turns.say(to, text),
                private=msg.direct,
                addressed=True,
            )
            return
        owner = config.is_owner(msg.user)
        if owner and msg.direct and host.channel.approvals.resolve(msg.conversation, msg.text):
            return  # the answer to an open yes/no question, not a new message
        if msg.direct and msg.text.startswith("/") and len(msg.text) > 1:
            await self.command(msg, owner)
            return
        arrival = Arrival(
            msg.key, msg.conversation, msg.to_payload(), msg.user, owner, msg.text, msg.message_id, joinable(msg)
        )
        await self.intake.take(arrival, lambda text: host.turns.say(to, text))

    async def command(self, msg: DiscordMessage, owner: bool) -> None:
        """A /command typed in a DM (no slash commands are registered: Discord sends it as text): /stop at once,
        the others answered in the chat's order (conversation/commands.py; the owner's data only in their DM)."""
        host = self.host
        to, chat = Address(msg.channel), msg.conversation
        if msg.text[1:].split(" ", 1)[0].lower() == "stop":
            stopped = host.runtime.agent.stop(chat)
            if stopped:
                host.channel.approvals.questions.decline_all(chat)
            await host.turns.say(to, texts.STOPPING_TEXT if stopped else texts.NOTHING_TO_STOP_TEXT)
            return

        async def answer() -> None:
            reply = await asyncio.to_thread(texts.command_reply, host.runtime, chat, msg.text, owner_data=owner)
            await host.turns.say(to, reply)

        if not host.tasks.spawn(chat, answer(), owner=owner):
            await self.intake.over_limit(chat, lambda text: host.turns.say(to, text))
