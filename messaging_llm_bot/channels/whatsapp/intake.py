"""What comes in through the webhook, in order for each message: the allowlist first (a stranger gets a pairing
code at most once an hour, or their number once with pairing off; nothing of theirs is stored or reaches the
model), the window noted (the user wrote: free-form messages may go to them for 24 hours, and replies held for
them go out now), the answer to an open yes/no question, ``/stop`` at once, the other commands in the chat's
order; then the durable inbox and a turn in the chat's queue. A message id is taken once, whatever it was (Meta
sends an event again until it heard 200, and a recorded POST can be sent again): a command or an answer is noted
as taken too (``ChannelIntake.handled_now``), so it runs once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Protocol

from assistant_framework.config.settings import WhatsAppSettings
from messaging_llm_bot.channels.contract import Address
from messaging_llm_bot.channels.whatsapp.channel import WhatsAppChannel
from messaging_llm_bot.channels.whatsapp.message import WaMessage, messages_of
from messaging_llm_bot.channels.whatsapp.settings import conversation_of
from messaging_llm_bot.channels.whatsapp.turn import WhatsAppTurns, joinable
from messaging_llm_bot.conversation.intake import Arrival
from messaging_llm_bot.conversation.service import ChannelHost
from messaging_llm_bot.conversation.strangers import Strangers
from messaging_llm_bot.conversation.strangers import refusal_text as not_allowed

log = logging.getLogger(__name__)


class WhatsAppIntakeHost(ChannelHost, Protocol):
    """What the intake uses of the running service (service.py)."""

    channel: WhatsAppChannel
    turns: WhatsAppTurns

    @property
    def config(self) -> WhatsAppSettings: ...


class WhatsAppIntake:
    def __init__(self, host: WhatsAppIntakeHost) -> None:
        self.host = host
        # A pairing code at most once an hour; with pairing off, their number once, ever (loaded at the start).
        self.strangers = Strangers.told_once(host.runtime, "whatsapp")
        self.intake = host.channel_intake(host.turns)

    async def take(self, payload: object) -> bool:
        """Every message of a signed payload of this number; False when one could not be stored (Meta sends
        the payload again: the ones stored are taken once)."""
        for msg in messages_of(payload, self.host.config.phone_number_id):
            if not await self.on_message(msg):
                return False
        return True

    async def on_message(self, msg: WaMessage) -> bool:
        host = self.host
        config = host.config
        if not config.allows(msg.sender):
            await self.refuse(msg)
            return True
        if await self.intake.came_before(msg.message_id):  # Meta's retry, or a recorded POST replayed
            return True
        say = functools.partial(host.turns.say, Address(msg.sender))
        chat = conversation_of(msg.sender)
        owner = config.is_owner(msg.sender)
        await asyncio.to_thread(host.channel.window.saw, msg.sender, msg.timestamp)
        host.channel.last_message[msg.sender] = msg.message_id
        self.release_held(msg.sender)
        if msg.kind == "text" and host.channel.resolve(msg.sender, msg.text):
            await self.intake.handled_now(msg.message_id)
            return True  # the answer to an open yes/no question, not a new message
        text = msg.text.strip()
        if msg.kind == "text" and text.startswith("/") and len(text) > 1:
            await self.intake.handled_now(msg.message_id)
            decline = functools.partial(host.channel.questions.decline_all, msg.sender)  # its open question: a no
            await self.intake.command(msg.text, chat, say, owner=owner, owner_data=owner, decline=decline)
            return True
        payload = {"message": msg.raw, "name": msg.name}
        arrival = Arrival(msg.message_id, chat, payload, msg.sender, owner, msg.text, msg.message_id, joinable(msg))
        # False: it could not be stored (Meta sends the payload again)
        return await self.intake.take(arrival, say)

    def release_held(self, number: str) -> None:
        """The user wrote, so the window is open: what waited for them goes out first, in its order, and (without
        a template) they are told once how to get such messages on time."""
        host = self.host
        chat = conversation_of(number)
        held = host.turns.take_held(chat)
        if not held:
            return
        # Replies, job runs and notices wait in the inbox; a held reminder is sent again by the scheduler.
        items = [item for item in (host.inbox.get(item_id) for item_id in held) if item is not None]
        log.info("whatsapp: %d held message(s) to %s go out now (the window is open again)", len(items), number)
        for item in items:
            host.tasks.spawn(chat, host.turns.answer(item), owner=True, exempt=True)
        host.tasks.spawn(chat, host.turns.tell_held(Address(number), chat), owner=True, exempt=True)

    async def refuse(self, msg: WaMessage) -> None:
        """A stranger: given a pairing code (at most once an hour), or with pairing off told their number once
        (they just wrote, so the window is open); nothing else."""
        await asyncio.to_thread(self.host.channel.window.saw, msg.sender, msg.timestamp)
        refusal = not_allowed(f"Your number is +{msg.sender}", "whatsapp.allowed")
        say = functools.partial(self.host.turns.say, Address(msg.sender))
        await self.strangers.answer(msg.sender, refusal, say, private=True, addressed=True)
