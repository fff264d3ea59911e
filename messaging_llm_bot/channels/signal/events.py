"""Incoming Signal events: read from the signal-cli stream, judged, and stored in the durable inbox.

Each message: the allowlist first (a stranger is told their id once: conversation/strangers.py); the answer to an
open confirmation question; commands (their texts: conversation/commands.py); otherwise the durable inbox,
written before the next event is read, and a turn in the chat's FIFO. A daemon that is down or goes away is
logged once per outage and retried with backoff. At start, the items a crash left are answered first (``replay``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from typing import Any, Protocol

from assistant_framework.config.settings import SignalSettings
from messaging_llm_bot.channels.signal.client import SignalClient, SignalUnavailable
from messaging_llm_bot.channels.signal.identity import Identities
from messaging_llm_bot.channels.signal.settings import (
    SignalMessage,
    addressed_to_bot,
    chat_of_conversation,
    is_bot,
    parse_event,
    refusal_text,
)
from messaging_llm_bot.channels.signal.turn import SignalTurns, joinable
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.intake import Arrival
from messaging_llm_bot.conversation.outage import Backoff, Outage
from messaging_llm_bot.conversation.service import ChannelHost
from messaging_llm_bot.conversation.strangers import Strangers

log = logging.getLogger(__name__)


class EventHost(ChannelHost, Protocol):
    """What the reader uses of the running Signal service (signal/service.py), which owns the reader."""

    client: SignalClient
    turns: SignalTurns
    outage: Outage
    identities: Identities
    approvals: ReplyApprovals
    strangers: Strangers
    account_uuid: str | None  # the bot's own UUID (getUserStatus at start), None when signal-cli did not say

    @property
    def settings(self) -> SignalSettings: ...

    async def learn_account_uuid(self) -> None: ...


class EventReader:
    """Reads the running ``service``'s event stream until it stops, and hands each message on."""

    def __init__(self, service: EventHost) -> None:
        self.service = service
        self._connected_once = False
        self.intake = service.channel_intake(service.turns, hold=True, lost=_lost, queue_of=chat_of_conversation)

    def _on_open(self) -> None:
        service = self.service
        service.outage.ok()
        if not self._connected_once:
            self._connected_once = True
            log.info("signal: connected to the signal-cli event stream at %s", service.settings.base_url)

    async def consume(self) -> None:
        """Read events until stopped; reconnect with backoff, logging an outage once."""
        service = self.service
        backoff = Backoff(service.backoff_max)
        while not service.stopping:
            opened = False

            def on_open() -> None:
                nonlocal opened
                opened = True
                backoff.reset()
                self._on_open()

            try:
                async for obj in service.client.events(on_open=on_open):
                    await self.on_event(obj)
                raise SignalUnavailable("the event stream ended")
            except SignalUnavailable as err:
                service.outage.failed(err)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a bug in one event must not end the stream for good
                log.exception("signal: reading the event stream failed")
            if not opened or service.outage.down:
                await service.sleep(backoff.next())

    async def on_event(self, obj: dict[str, Any]) -> None:
        """One event of the stream: gate it, then a command, an approval's answer, or a stored message."""
        service = self.service
        await service.learn_account_uuid()  # a no-op once signal-cli answered; before, the daemon was down
        msg = parse_event(obj)
        if msg is None or is_bot(msg.number, msg.uuid, service.settings.account, service.account_uuid):
            return
        sender = service.identities.judge(msg, service.settings)
        if not sender.allowed:
            if sender.mismatch is None:  # a number that belongs to another account gets no answer at all
                await self._refuse(msg)
            return
        if msg.number and msg.uuid and service.identities.pinned(msg.number) is None:
            await asyncio.to_thread(service.identities.pin, msg, sender)  # the number's first message with an account
        if sender.owner_chat(msg) and msg.kind() == "text" and service.approvals.resolve(msg.chat, msg.text):
            return  # the answer to an open confirmation question, not a new message
        owner = sender.owner  # in any chat: never refused over the limit, and first for a free slot

        answer = functools.partial(service.turns.say_to, msg)
        if msg.kind() == "text" and msg.text.startswith("/"):
            decline = functools.partial(service.approvals.resolve, msg.chat, "no")  # an open question: declined
            owner_data = sender.owner_chat(msg)
            await self.intake.command(
                msg.text, msg.conversation_id, answer, owner=owner, owner_data=owner_data, decline=decline
            )
            return
        if not addressed_to_bot(msg, service.settings, service.account_uuid):
            return
        arrival = Arrival(
            msg.source_id,
            msg.conversation_id,
            obj,
            msg.sender,
            owner,
            msg.text,
            msg.timestamp,
            joinable(msg),
            queue=msg.chat,
        )

        async def tell_held(text: str) -> None:  # in the chat's order
            service.tasks.spawn(msg.chat, service.turns.say_to(msg, text), owner=owner, exempt=True)

        await self.intake.take(arrival, answer, tell_held=tell_held)

    async def _refuse(self, msg: SignalMessage) -> None:
        """Tell a stranger their ids once (conversation/strangers.py); in a group only when they address the
        bot, whatever signal.group_mode says."""
        service = self.service
        addressed = addressed_to_bot(
            msg, dataclasses.replace(service.settings, group_mode="mention"), service.account_uuid
        )
        who, private = msg.uuid or msg.number or "?", msg.group_id is None
        pair_as, say = msg.number or msg.uuid or "", functools.partial(service.turns.say_to, msg)
        await service.strangers.answer(
            who, refusal_text(msg), say, private=private, addressed=addressed, pair_as=pair_as
        )


def _lost(arrival: Arrival) -> None:
    log.warning(
        "signal: stopped while the message %s from %s waited for the inbox: it is lost (signal-cli does not "
        "deliver a message again); ask them to send it again",
        arrival.message_id,
        arrival.sender,
    )
