"""The sync loop: invites judged, messages gated and stored in the durable inbox, then the sync position kept.

Order of each message: the bot's own events are skipped; an encrypted room is told once that the bot cannot
read it; the allowlist comes first (a stranger who addresses the bot is told once, nothing of theirs is
stored or reaches the model); then the answer to an open yes/no question, ``/stop`` at once, the other
commands in the chat's order; then the durable inbox (the event id taken once) and a turn in the chat's queue.
Only when every event of a sync answer is in the inbox is its ``next_batch`` written (state.py), so a crash
between the two gives the same events again, and the inbox drops the ones it has.

Invites: joined only when the inviter is in ``matrix.allowed``; any other invite is refused (left), with a
reason the inviter sees (with pairing on, a stranger's pairing code at most once an hour: their way to ask
for a private chat), and nothing else happens.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Protocol

import nio

from assistant_framework.config.settings import MatrixSettings
from assistant_framework.json_types import JsonObject
from messaging_llm_bot.channels.contract import Address, DeliveryError
from messaging_llm_bot.channels.matrix.channel import MatrixChannel
from messaging_llm_bot.channels.matrix.client import LoginFailed, MatrixUnavailable
from messaging_llm_bot.channels.matrix.message import MatrixMessage, is_command, parse_message
from messaging_llm_bot.channels.matrix.state import StateFile
from messaging_llm_bot.channels.matrix.turn import MatrixTurns, joinable
from messaging_llm_bot.conversation.intake import Arrival
from messaging_llm_bot.conversation.outage import Backoff, Outage
from messaging_llm_bot.conversation.pairing import WELCOME_TEXT, Pairing
from messaging_llm_bot.conversation.service import ChannelHost
from messaging_llm_bot.conversation.strangers import Strangers
from messaging_llm_bot.conversation.strangers import refusal_text as not_allowed

log = logging.getLogger(__name__)
ENCRYPTED_TEXT = (
    "This room is end-to-end encrypted, and I cannot read encrypted messages. Please talk to me in a room "
    "without encryption (start a new direct chat with encryption turned off)."
)
INVITE_REFUSED = "This assistant joins only rooms its owner allowed."


class ToldInState:
    """A stranger is told once, ever: noted in the channel's state file (state.py), with its sync position."""

    def __init__(self, state: StateFile) -> None:
        self.state = state

    async def load(self) -> None:
        """The state file is read at start."""

    async def first(self, who: str) -> bool:
        return await asyncio.to_thread(self.state.tell_once, f"stranger:{who}")


class SyncHost(ChannelHost, Protocol):
    """What the reader uses of the running service (service.py)."""

    channel: MatrixChannel
    turns: MatrixTurns
    state: StateFile

    @property
    def config(self) -> MatrixSettings: ...


class SyncReader:
    """Runs the sync loop of a started service until it stops."""

    def __init__(self, host: SyncHost) -> None:
        self.host = host
        self.synced = asyncio.Event()  # set after the first sync answer was handled (tests, doctor)
        self.outage = Outage("matrix", f"the homeserver {host.config.homeserver}", log)  # logged once per outage
        self.intake = host.channel_intake(host.turns, hold=True)
        self.strangers = Strangers("matrix", ToldInState(host.state), Pairing(host.runtime))

    @property
    def bot(self) -> str:
        return self.host.channel.client.user_id

    async def consume(self) -> None:
        host = self.host
        backoff = Backoff(host.backoff_max)
        full_state = True  # the first answer of a run brings every room's members and encryption
        while not host.stopping:
            first = host.state.state.next_batch is None
            try:
                answer = await host.channel.client.sync(host.state.state.next_batch, first=first, full_state=full_state)
            except (MatrixUnavailable, DeliveryError) as err:
                if "M_UNKNOWN_TOKEN" in str(err) and await self.login_again(err):
                    continue
                self.outage.failed(err)
                await host.sleep(backoff.next())
                continue
            except asyncio.CancelledError:
                raise
            self.outage.ok()
            backoff.reset()
            full_state = False
            try:
                stored = await self.handle(answer, skip_timeline=first)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - one bad answer must not end the channel; its position is not kept
                log.exception("matrix: handling a sync answer failed")
                await host.sleep(backoff.next())
                continue
            if not stored:
                return  # stopped while the inbox could not store: the position stays before these events
            await asyncio.to_thread(host.state.update, next_batch=answer.next_batch)
            self.synced.set()

    async def login_again(self, err: Exception) -> bool:
        """The session ended (the password changed, the device was logged out elsewhere): log in again on the
        same device with the configured password; False when that is refused too (said once)."""
        try:
            await self.host.channel.client.login()
        except (LoginFailed, MatrixUnavailable) as again:
            if not self.outage.down:  # said once, as an outage is
                self.outage.down = True
                log.error("matrix: the homeserver ended the bot's session (%s) and refused a new login: %s", err, again)
            return False
        log.warning("matrix: the homeserver ended the bot's session (%s); logged in again", err)
        self.outage.down = False
        return True

    async def handle(self, answer: nio.SyncResponse, *, skip_timeline: bool) -> bool:
        """Every invite and message of one sync answer; False when a stop came before all were stored."""
        for room_id, invite in answer.rooms.invite.items():
            # nio takes a member event's content out of its source (``is_direct`` is read there): put back
            state = [
                {**e.source, "content": getattr(e, "content", {})} for e in invite.invite_state if hasattr(e, "source")
            ]
            await self.on_invite(room_id, state)
        if skip_timeline:
            if answer.rooms.join:
                log.info(
                    "matrix: first start on this workspace: earlier messages in %d room(s) are not answered",
                    len(answer.rooms.join),
                )
            return True
        for room_id, info in answer.rooms.join.items():
            sources = [e.source for e in info.timeline.events if isinstance(getattr(e, "source", None), dict)]
            if info.timeline.limited and not any(self._joined_now(e) for e in sources):
                log.warning(
                    "matrix: more messages came in %s while I was away than one sync gives; the earliest were skipped",
                    room_id,
                )
            for source in sources:
                if not await self.on_event(room_id, source):
                    return False
        return True

    def _joined_now(self, event: JsonObject) -> bool:
        """The bot's own join: a room joined in this answer brings its history, not missed messages."""
        content = event.get("content") if isinstance(event.get("content"), dict) else {}
        return (
            event.get("type") == "m.room.member"
            and event.get("state_key") == self.bot
            and isinstance(content, dict)
            and content.get("membership") == "join"
        )

    # -- invites ------------------------------------------------------------------------

    async def on_invite(self, room_id: str, invite_state: list[JsonObject]) -> None:
        host = self.host
        invite = next(
            (e for e in invite_state if e.get("type") == "m.room.member" and e.get("state_key") == self.bot), {}
        )
        inviter, content = invite.get("sender"), invite.get("content")
        if isinstance(inviter, str) and host.config.allows(inviter):
            try:
                await host.channel.client.join(room_id)
            except (MatrixUnavailable, DeliveryError) as err:
                log.warning("matrix: could not join %s (invited by %s): %s", room_id, inviter, err)
                return
            log.info("matrix: joined %s, invited by %s", room_id, inviter)
            if host.config.is_owner(inviter) and isinstance(content, dict) and content.get("is_direct") is True:
                # the owner's own direct chat: their room from now on, none is opened for them (service.py)
                await asyncio.to_thread(host.state.update, owner_room=room_id, owner=inviter)
            return
        reason = INVITE_REFUSED
        if isinstance(inviter, str):
            said = await self.pairing_answer(inviter)
            if said == WELCOME_TEXT and host.config.allows(inviter):  # approved from the shell meanwhile
                await self.on_invite(room_id, invite_state)
                return
            if said:  # a code, at most once an hour: the inviter sees the reason of the refusal
                reason = f"{INVITE_REFUSED} {said}"
        log.info("matrix: refused the invite to %s from %s (not in matrix.allowed)", room_id, inviter or "?")
        try:
            await host.channel.client.leave(room_id, reason)
        except (MatrixUnavailable, DeliveryError) as err:
            log.info("matrix: could not refuse the invite to %s: %s", room_id, err)

    # -- messages -----------------------------------------------------------------------

    def _direct(self, room_id: str) -> bool:
        """A room of the bot and one person (joined or invited): a private chat."""
        room = self.host.channel.client.nio.rooms.get(room_id)
        return room is not None and room.member_count <= 2

    async def on_event(self, room_id: str, event: JsonObject) -> bool:
        """One timeline event; False only when a stop came while the inbox could not store it."""
        host = self.host
        sender = event.get("sender")
        if sender == self.bot or not isinstance(sender, str):
            return True
        if event.get("type") == "m.room.encrypted":
            if host.config.allows(sender) and await asyncio.to_thread(host.state.tell_once, f"e2ee:{room_id}"):
                log.warning("matrix: %s is end-to-end encrypted; told the room that I cannot read it", room_id)
                await host.turns.say(Address(room_id), ENCRYPTED_TEXT)
            return True
        msg = parse_message(room_id, event, self._direct(room_id), self.bot)
        if msg is None:
            return True
        config = host.config
        if not config.allows(sender):
            await self.refuse(msg)
            return True
        owner = config.is_owner(sender)
        if msg.direct and owner:
            await asyncio.to_thread(host.state.update, owner_room=room_id, owner=sender)
            if host.channel.resolve(room_id, msg.text):
                return True  # the answer to an open yes/no question, not a new message
        chat = msg.conversation_id

        answer = functools.partial(host.turns.say, msg.address)
        if is_command(msg):
            decline = functools.partial(host.channel.questions.decline_all, room_id)  # its open question: a no
            owner_data = msg.direct and owner
            await self.intake.command(msg.text, chat, answer, owner=owner, owner_data=owner_data, decline=decline)
            return True
        if not (msg.direct or config.group_mode == "all" or msg.mentions_bot):
            return True
        payload = {"room": msg.room_id, "event": event, "direct": msg.direct}
        arrival = Arrival(msg.event_id, chat, payload, sender, owner, msg.text, msg.event_id, joinable(msg))
        # False: a stop came while the inbox could not store it (the sync position stays before it)
        return await self.intake.take(arrival, answer)

    async def pairing_answer(self, sender: str) -> str | None:
        """What a stranger who asks for a private chat is told (conversation/pairing.py): their code at most
        once an hour, "" for nothing, the welcome when the shell approved them meanwhile; None: pairing is off."""
        return await asyncio.to_thread(Pairing(self.host.runtime).stranger, "matrix", sender)

    async def refuse(self, msg: MatrixMessage) -> None:
        """A stranger in a room the bot is in: told once, when they address the bot (in a direct room with
        pairing on: a pairing code, at most once an hour); nothing else (conversation/strangers.py)."""
        refusal = not_allowed(f"Your Matrix id is {msg.sender}", "matrix.allowed")
        await self.strangers.answer(
            msg.sender,
            refusal,
            functools.partial(self.host.turns.say, msg.address),
            private=msg.direct,
            addressed=msg.mentions_bot,
        )
