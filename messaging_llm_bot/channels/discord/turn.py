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
from functools import partial
from typing import TYPE_CHECKING

from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.media.files_out import FileToSend
from messaging_llm_bot.channels.contract import Address, DeliveryError, OutgoingFile, TextOut
from messaging_llm_bot.channels.discord.api import DiscordUnavailable
from messaging_llm_bot.channels.discord.channel import DiscordChannel
from messaging_llm_bot.channels.discord.files import save_files
from messaging_llm_bot.channels.discord.format import CAPABILITIES, split
from messaging_llm_bot.channels.discord.live import DiscordLive
from messaging_llm_bot.channels.discord.message import DiscordMessage, message_of_payload
from messaging_llm_bot.channels.discord.settings import DiscordConfig, channel_of
from messaging_llm_bot.conversation.files_out import file_sender
from messaging_llm_bot.conversation.item_turns import ItemTurns, SendLater, is_notice_item
from messaging_llm_bot.conversation.progress import Progress
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import TurnRequest

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from messaging_llm_bot.agent.images import ImageInput

log = logging.getLogger(__name__)


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
        if is_notice_item(item):  # the owner's notice: its text is the recorded reply
            if await self.deliver(item, address_of(item.conversation_id), item.reply or ""):
                await asyncio.to_thread(self.inbox.complete, item.item_id)
            return
        msg = message_of_payload(item.payload)
        if msg is None:  # cannot happen for items this channel wrote
            return await self.unreadable(item)
        to = Address(msg.channel)
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []
        # A live message a crashed run left (the ledger's record) is taken over: edited, never left beside another.
        live_id = str(item.live) if item.live is not None else None
        if reply is None:
            progress = Progress(
                DiscordLive(self.platform, msg.channel),
                stream=self.config.stream and self.runtime.settings.llm.stream,
                edit_interval=self.config.edit_interval,
                message_id=item.live,
                on_message=lambda snowflake: self.record_live(item.item_id, snowflake),
            )
            await progress.start()
            produce = functools.partial(self._produce, item, msg, progress)
            reply, merged, later = await self.make_reply(item, msg.user, joinable(msg), produce, after=progress.stop)
            live_id = str(progress.message_id) if progress.message_id is not None else None
        if await self.deliver(item, to, reply, live_id):
            await self.finish(item, merged, later)  # else stopping: it and the messages it answers stay

    async def _produce(self, item: InboxItem, msg: DiscordMessage, progress: Progress) -> str:
        from_owner = self.config.is_owner(msg.user)
        owner_chat = msg.direct and from_owner  # only the owner's own DM sees the owner's data
        loop = asyncio.get_running_loop()
        approve = self.platform.approvals.approver(item.conversation_id, loop) if owner_chat else None
        text, untrusted, notice = msg.text, False, ""
        images: tuple[ImageInput, ...] = ()
        if msg.files:  # someone's files: outside content, in the chat's own area (the owner's memory in their DM)
            save = partial(save_files, self.config.base_url, msg, self.runtime.settings)
            got, notice = await self.files(
                item.conversation_id, owner_chat, self.runtime.settings.runtime.timezone, save
            )
            if isinstance(got, str):
                return got  # the file could not be fetched or read: the reason, no model turn
            text, untrusted, images = got.text, True, got.images
        to = Address(msg.channel)
        send_file = file_sender(
            self.runtime.workspace,
            item.item_id,
            loop,
            lambda one: self._send_file(to, one),
            CAPABILITIES.max_file_bytes,
        )
        request = TurnRequest(
            item.conversation_id,
            text,
            item.conversation_id,
            msg.user,
            msg.message_id,
            owner_chat,
            from_owner,
            untrusted=untrusted,
            images=images,
            notice=notice,
            send_file=send_file,
        )
        return await self.ask_agent(request, approve=approve, on_event=progress.on_event)

    async def _send_file(self, to: Address, one: FileToSend) -> str:
        """A file of the ``send_file`` skill into the turn's channel (its ledger: media/files_out.py)."""
        sent = await self.platform.send_file(to, OutgoingFile("photo" if one.photo else "file", one.path, one.caption))
        return sent.message_ids[0]

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
    DM (a guild's mentions never join; no command, no files)."""
    return msg.direct and not msg.files and not msg.text.startswith("/")
