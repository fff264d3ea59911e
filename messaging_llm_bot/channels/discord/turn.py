"""Answer one durable inbox item from Discord on conversation/item_turns.py's flow: the agent's turn, its answer
growing in one message while the model writes (edits, conversation/progress.py), then the reply delivered through
the ledger: the live message edited into the first part, the rest sent after it in the same channel.

Used for live messages, the start-up replay, job runs and the owner's notices; the caller holds the chat's queue,
so one conversation's messages are answered in order. Each part goes out once and is recorded as it goes: a crash
resends only what is not recorded. While Discord cannot be reached or rate-limits the bot longer than the library
waits, the reply waits (it is in the inbox) and is retried until a stop.
"""

from __future__ import annotations

import asyncio
import functools
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
from messaging_llm_bot.conversation.item_turns import ItemTurns, SendLater
from messaging_llm_bot.conversation.progress import Progress
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import TurnRequest

log = logging.getLogger(__name__)

NOTICE_KEY = "notice"


def address_of(conversation_id: str) -> Address:
    return Address(channel_of(conversation_id))


class TurnRunner(ItemTurns):
    """Runs turns for the Discord channel; one per running channel."""

    REREAD = True  # a job run handed over again may have been answered meanwhile

    def __init__(
        self, runtime: Runtime, inbox: Inbox, channel: DiscordChannel, config: Callable[[], DiscordConfig]
    ) -> None:
        super().__init__(runtime, inbox, "discord")
        self.platform = channel
        self._config = config

    @property
    def config(self) -> DiscordConfig:
        return self._config()

    async def answer_message(self, item: InboxItem) -> None:
        if NOTICE_KEY in item.payload:  # the owner's notice: its text is the recorded reply
            if await self.deliver(item, address_of(item.conversation_id), item.reply or ""):
                await asyncio.to_thread(self.inbox.complete, item.item_id)
            return
        msg = message_of_payload(item.payload)
        if msg is None:  # cannot happen for items this channel wrote
            return await self.unreadable(item)
        to = Address(msg.channel)
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []
        live_id = None
        if reply is None:
            live = DiscordLive(self.platform, msg.channel)
            progress = Progress(live, stream=self.config.stream and self.runtime.settings.llm.stream)
            await progress.start()
            produce = functools.partial(self._produce, item, msg, progress)
            reply, merged, later = await self.make_reply(item, msg.user, joinable(msg), produce, after=progress.stop)
            live_id = live.sent.get(progress.message_id) if progress.message_id is not None else None
        if await self.deliver(item, to, reply, live_id):
            await self.finish(item, merged, later)  # else stopping: it and the messages it answers stay

    async def _produce(self, item: InboxItem, msg: DiscordMessage, progress: Progress) -> str:
        from_owner = self.config.is_owner(msg.user)
        owner_chat = msg.direct and from_owner  # only the owner's own DM sees the owner's data
        approve = None
        if owner_chat:
            approve = self.platform.approvals.approver(item.conversation_id, asyncio.get_running_loop())
        request = TurnRequest(
            item.conversation_id, msg.text, item.conversation_id, msg.user, msg.message_id, owner_chat, from_owner
        )
        return await self.ask_agent(request, approve=approve, on_event=progress.on_event)

    async def say(self, to: Address, text: str) -> None:
        try:
            await self.platform.send_text(to, TextOut(text))
        except (DiscordUnavailable, DeliveryError) as err:
            log.info("discord: could not say %r in %s: %s", text[:40], to.chat_id, err)

    async def deliver(self, item: InboxItem, to: Address, reply: str, live_id: str | None = None) -> bool:
        """The one delivery path of chat turns, job runs and notices: the parts not in the ledger, each recorded as
        it goes out, the first into the live message when there is one. Retries while Discord cannot take it;
        False when stopping first (the item stays)."""

        async def on_part_sent(index: int, _id: str) -> None:
            await self.record_part(item.item_id, index, index + 1)

        async def attempt() -> bool:
            skip = self.inbox.parts_sent(item.item_id)
            try:
                if skip == 0 and live_id is not None:
                    await self.platform.edit(to.chat_id, live_id, split(reply)[0])
                    await on_part_sent(0, live_id)
                    skip = 1
                await self.platform.send_text(to, TextOut(reply, None, skip, on_part_sent, item.item_id))
            except DiscordUnavailable as err:
                raise SendLater(err, after=err.retry_after) from err
            return True

        return await self.deliver_until(item, to.chat_id, attempt)

    async def answer_job(self, item: InboxItem) -> None:
        to = address_of(item.conversation_id)
        user = self.config.owner or ""
        await self.run_job(item, user, lambda text: self.deliver(item, to, text), lambda text: self.say(to, text))


def joinable(msg: DiscordMessage) -> bool:
    """A turn later messages may join, or a message that may join one (busy modes): a person's own text in a
    DM (a guild's mentions never join; no command)."""
    return msg.direct and not msg.text.startswith("/")
