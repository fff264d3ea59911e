"""Answer one durable inbox item from Discord: the agent's turn, its answer growing in one message while the
model writes (edits, conversation/progress.py), then the reply delivered through the ledger: the live message
edited into the first part, the rest sent after it in the same channel.

Used for live messages, the start-up replay, job runs and the owner's notices; the caller holds the chat's queue,
so one conversation's messages are answered in order. Each part goes out once and is recorded as it goes: a crash
resends only what is not recorded. While Discord cannot be reached or rate-limits the bot longer than the library
waits, the reply waits (it is in the inbox) and is retried until a stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.channels.contract import Address, DeliveryError, TextOut
from messaging_llm_bot.channels.discord.api import DiscordUnavailable
from messaging_llm_bot.channels.discord.channel import DiscordChannel
from messaging_llm_bot.channels.discord.format import split
from messaging_llm_bot.channels.discord.live import DiscordLive
from messaging_llm_bot.channels.discord.message import DiscordMessage, message_of_payload
from messaging_llm_bot.channels.discord.settings import DiscordConfig, channel_of
from messaging_llm_bot.conversation.busy import RunningTurn
from messaging_llm_bot.conversation.job_answer import answer_job_run
from messaging_llm_bot.conversation.job_runs import is_job_item
from messaging_llm_bot.conversation.progress import Progress
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import ChannelTurns, TurnRequest

log = logging.getLogger(__name__)

FAILED_REPLY = "Sorry, something went wrong while answering. Please try again."
RETRY_MAX_SECONDS = 30.0
NOTICE_KEY = "notice"


def address_of(conversation_id: str) -> Address:
    return Address(channel_of(conversation_id))


class TurnRunner(ChannelTurns):
    """Runs turns for the Discord channel; one per running channel."""

    def __init__(
        self, runtime: Runtime, inbox: Inbox, channel: DiscordChannel, config: Callable[[], DiscordConfig]
    ) -> None:
        super().__init__(runtime, inbox, "discord")
        self.discord = channel
        self._config = config
        self.stop_event = asyncio.Event()

    @property
    def config(self) -> DiscordConfig:
        return self._config()

    async def answer(self, item: InboxItem) -> None:
        """Answer ``item`` and complete it; while stopping it is left in the inbox for the next start."""
        if self.stopping:
            log.info("discord: stopping; %s stays in the inbox for the next start", item.item_id)
            return
        current = self.inbox.get(item.item_id)
        if current is None:  # answered meanwhile: a job run handed over again
            return
        item = current
        with self._active.tracking():
            if is_job_item(item):
                await self._answer_job(item)
            elif NOTICE_KEY in item.payload:
                await self._finish(item, address_of(item.conversation_id), item.reply or "")
            else:
                await self._answer(item)

    async def _answer(self, item: InboxItem) -> None:
        msg = message_of_payload(item.payload)
        if msg is None:  # cannot happen for items this channel wrote; a foreign file is completed, not retried
            log.error("discord: inbox item %s holds no Discord message; completing it", item.item_id)
            await asyncio.to_thread(self.inbox.complete, item.item_id)
            return
        to = Address(msg.channel)
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []  # offered to this turn but not answered by it: each answered after it
        live_id = None
        if reply is None:
            reply, merged, later, live_id = await self._reply(item, msg, to)
        if not await self.deliver(item, to, reply, live_id):
            return  # stopping: it and the messages it answers stay in the inbox
        for one in [*merged, item.item_id]:
            await asyncio.to_thread(self.inbox.complete, one)
        for other in later:  # offered, but the turn ended first: each answered in its own turn, in order
            await self._answer(other)

    async def _reply(
        self, item: InboxItem, msg: DiscordMessage, to: Address
    ) -> tuple[str, list[str], list[InboxItem], str | None]:
        """A new turn's reply, recorded with the ids of the later messages it answers (they joined it: busy
        modes); also the messages offered to it that it does not answer, and the live message's id."""
        live = DiscordLive(self.discord, msg.channel)
        progress = Progress(live, stream=self.config.stream and self.runtime.settings.llm.stream)
        await progress.start()
        running: RunningTurn[InboxItem] | None = None
        failed = True
        try:
            with self.busy.turn(item.conversation_id, msg.user, joinable(msg)) as running:
                reply = await self._turn(item, msg, progress)
            failed = False
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - last line of defence: say so instead of going silent
            log.exception("discord: answering %s failed", item.item_id)
            reply = FAILED_REPLY
        finally:
            await progress.stop()
        joined, later = running.outcome(failed) if running is not None else ([], [])
        merged = [one.item_id for one in joined]
        live_id = live.sent.get(progress.message_id) if progress.message_id is not None else None
        try:
            # One write: the reply and the later messages it answers (a replay completes them with it).
            await asyncio.to_thread(self.inbox.record_reply, item.item_id, reply, merged)
        except OSError as err:
            log.warning("discord: could not record the reply of %s: %s", item.item_id, err)
        return reply, merged, later, live_id

    async def _finish(self, item: InboxItem, to: Address, reply: str) -> None:
        if await self.deliver(item, to, reply):
            await asyncio.to_thread(self.inbox.complete, item.item_id)

    async def _turn(self, item: InboxItem, msg: DiscordMessage, progress: Progress) -> str:
        from_owner = self.config.is_owner(msg.user)
        owner_chat = msg.direct and from_owner  # only the owner's own DM sees the owner's data
        approve = None
        if owner_chat:
            approve = self.discord.approvals.approver(item.conversation_id, asyncio.get_running_loop())
        request = TurnRequest(
            item.conversation_id, msg.text, item.conversation_id, msg.user, msg.message_id, owner_chat, from_owner
        )
        return await self.ask_agent(request, approve=approve, on_event=progress.on_event)

    async def say(self, to: Address, text: str) -> None:
        try:
            await self.discord.send_text(to, TextOut(text))
        except (DiscordUnavailable, DeliveryError) as err:
            log.info("discord: could not say %r in %s: %s", text[:40], to.chat_id, err)

    async def _send(self, item: InboxItem, to: Address, reply: str, live_id: str | None) -> None:
        """The parts not in the ledger; the first into the live message when there is one."""

        async def on_part_sent(index: int, _id: str) -> None:
            try:
                await asyncio.to_thread(self.inbox.record_part, item.item_id, index, index + 1)
            except (OSError, KeyError) as err:
                log.warning("discord: could not record part %d of %s: %s", index, item.item_id, err)

        skip = self.inbox.parts_sent(item.item_id)
        if skip == 0 and live_id is not None:
            await self.discord.edit(to.chat_id, live_id, split(reply)[0])
            await on_part_sent(0, live_id)
            skip = 1
        await self.discord.send_text(to, TextOut(reply, None, skip, on_part_sent, item.item_id))

    async def deliver(self, item: InboxItem, to: Address, reply: str, live_id: str | None = None) -> bool:
        """The one delivery path of chat turns, job runs and notices. Retries while Discord cannot take it;
        False when stopping first."""
        delay = 0.5
        told = False
        while True:
            try:
                await self._send(item, to, reply, live_id)
                return True
            except DeliveryError as err:
                log.error("discord: the reply of %s in %s was refused: %s; giving up", item.item_id, to.chat_id, err)
                return True
            except DiscordUnavailable as err:
                if not told:
                    told = True
                    log.warning("discord: the reply of %s cannot be sent for now: %s; retrying", item.item_id, err)
                wait = max(delay, err.retry_after)
            if self.stopping:
                return False
            try:
                await asyncio.wait_for(self.stop_event.wait(), wait)
                return False
            except asyncio.TimeoutError:
                delay = min(delay * 2, RETRY_MAX_SECONDS)

    async def _answer_job(self, item: InboxItem) -> None:
        to = address_of(item.conversation_id)

        async def deliver(text: str) -> bool:
            return await self.deliver(item, to, text)

        async def tell(text: str) -> None:
            await self.say(to, text)

        await answer_job_run(
            self.runtime,
            self.pool,
            self.inbox,
            item,
            chat_id=item.conversation_id,
            user_id=self.config.owner or "",
            deliver=deliver,
            tell=tell,
        )


def joinable(msg: DiscordMessage) -> bool:
    """A turn later messages may join, or a message that may join one (busy modes): a person's own text in a
    DM (a guild's mentions never join; no command)."""
    return msg.direct and not msg.text.startswith("/")
