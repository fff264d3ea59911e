"""Answer one durable inbox item from WhatsApp: the read receipt with "typing...", the agent's turn, then the
reply delivered through the ledger.

Used for live messages, the start-up replay, job runs and the owner's notices; the caller holds the chat's
queue, so one chat's messages are answered in order. Each part goes out once and is recorded in the ledger as
it goes: a crash resends only what is not recorded. While the Graph API cannot be reached the reply waits (it
is in the inbox) and is retried with backoff until a stop. Outside the 24-hour window without a template the
reply is held (``held``): the item stays in the inbox and goes out when the user writes again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from assistant_framework.config.settings import WhatsAppSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.media.files_out import FileToSend
from messaging_llm_bot.channels.contract import Address, DeliveryError, OutgoingFile, TextOut
from messaging_llm_bot.channels.whatsapp.channel import OutsideWindow, WhatsAppChannel, default_name
from messaging_llm_bot.channels.whatsapp.format import CAPABILITIES
from messaging_llm_bot.channels.whatsapp.graph import GraphUnavailable
from messaging_llm_bot.channels.whatsapp.message import WaMessage, message_of_payload
from messaging_llm_bot.channels.whatsapp.settings import number_of
from messaging_llm_bot.conversation.files_out import file_sender
from messaging_llm_bot.conversation.item_turns import ItemTurns, SendLater, is_notice_item
from messaging_llm_bot.conversation.media_in import attachment_input
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import TurnInput, TurnRequest

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    pass

log = logging.getLogger(__name__)

MAX_FILE_IN_BYTES = 100 * 1024 * 1024  # WhatsApp's largest document
UNSUPPORTED = "I cannot take {kind} messages here yet: send text, a picture, a document or a voice message."
#: Told once (per chat) when held messages go out after the window opened again, without a template set.
HELD_TEXT = (
    "The messages above waited for you: WhatsApp lets me write first only within 24 hours of your last "
    "message, and later only as a template Meta approved. To get reminders, job runs and notices on time, "
    "create a template with one text parameter in WhatsApp Manager and set it: config set whatsapp.template.name "
    "NAME (docs/whatsapp.md#the-24-hour-window)."
)
HELD_FLAG = "whatsapp-held-told"


class TurnRunner(ItemTurns):
    """Runs turns for the WhatsApp channel; one per running channel."""

    REREAD = True  # answered meanwhile: a job run handed over again, a held reply released twice

    def __init__(
        self, runtime: Runtime, inbox: Inbox, channel: WhatsAppChannel, config: Callable[[], WhatsAppSettings]
    ) -> None:
        super().__init__(runtime, inbox, "whatsapp")  # the turns running, the pool, the chat's flags, busy modes
        self.platform = channel
        self._config = config
        self.held: dict[str, str] = {}  # item id -> conversation: replies waiting for the window to open

    @property
    def config(self) -> WhatsAppSettings:
        return self._config()

    async def answer_message(self, item: InboxItem) -> None:
        if is_notice_item(item):
            if await self.deliver(item, Address(number_of(item.conversation_id)), item.reply or ""):
                await asyncio.to_thread(self.inbox.complete, item.item_id)
            return
        msg = message_of_payload(item.payload)
        if msg is None:  # cannot happen for items this channel wrote
            return await self.unreadable(item)
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []
        if reply is None:
            await self._typing(msg)
            produce = functools.partial(self._produce, item, msg)
            reply, merged, later = await self.make_reply(item, msg.sender, joinable(msg), produce)
        if await self.deliver(item, Address(msg.sender), reply, msg.message_id):
            await self.finish(item, merged, later)  # else stopping, or held outside the window: all stay

    async def _typing(self, msg: WaMessage) -> None:
        try:
            await self.platform.client.mark_read(msg.message_id, typing=self.config.typing)
        except (GraphUnavailable, DeliveryError) as err:
            log.info("whatsapp: could not mark %s read: %s", msg.message_id, err)

    async def _produce(self, item: InboxItem, msg: WaMessage) -> str:
        owner_chat = self.config.is_owner(msg.sender)
        if not msg.readable:
            return UNSUPPORTED.format(kind=msg.kind)
        got = TurnInput(msg.text)
        if msg.media is not None:  # without transcription a voice note is saved like any file
            media = msg.media
            read = await attachment_input(
                self,
                item.conversation_id,
                owner_chat,
                media,
                msg.text,
                lambda: self.platform.download(media, MAX_FILE_IN_BYTES),
                lambda mime: media.name or default_name(media, mime),
            )
            if isinstance(read, str):
                return read
            got = read
        to = Address(msg.sender)
        loop = asyncio.get_running_loop()
        request = TurnRequest(
            item.conversation_id,
            got.text,
            chat_id=item.conversation_id,
            user_id=msg.sender,
            message_id=msg.message_id,
            owner_chat=owner_chat,  # only the owner's own chat sees the owner's data
            from_owner=owner_chat,
            untrusted=got.untrusted,
            images=got.images,
            notice=got.notice,
            send_file=file_sender(
                self.runtime.workspace,
                item.item_id,
                loop,
                lambda one: self._send_workspace_file(to, one),
                CAPABILITIES.max_file_bytes,
            ),
        )
        # The answer cannot grow in place: it goes out whole at the end.
        return await self.ask_agent(
            request, approve=self.platform.approvals.approver(msg.sender, loop) if owner_chat else None
        )

    async def _send_workspace_file(self, to: Address, one: FileToSend) -> str:
        out = OutgoingFile("photo" if one.photo else "file", one.path, one.caption)
        sent = await self.platform.send_file(to, out)
        return sent.message_ids[0]

    async def say(self, to: Address, text: str) -> None:
        try:
            await self.platform.send_text(to, TextOut(text))
        except (GraphUnavailable, DeliveryError, OutsideWindow) as err:
            log.info("whatsapp: could not say %r to %s: %s", text[:40], to.chat_id, err)

    async def deliver(self, item: InboxItem, to: Address, reply: str, reply_to: str | None = None) -> bool:
        """The one delivery path of chat turns, job runs and notices: the parts not in the ledger, each recorded
        as it goes out. Retries while the Graph API cannot be reached; False when stopping first, or when the
        reply is held outside the window (the item stays, ``held``)."""

        async def on_part_sent(index: int, _id: str) -> None:
            await self.record_part(item.item_id, index, index + 1)

        async def attempt() -> bool:
            skip = self.inbox.parts_sent(item.item_id)
            try:
                await self.platform.send_text(to, TextOut(reply, reply_to, skip, on_part_sent, item.item_id))
            except OutsideWindow:
                if item.item_id in self.held:  # a job run is handed over again at each look: said once
                    return False
                self.held[item.item_id] = item.conversation_id
                log.warning(
                    "whatsapp: %s waits for %s's next message (more than 24 hours since their last one and no "
                    "whatsapp.template)",
                    item.item_id,
                    to.chat_id,
                )
                return False
            except GraphUnavailable as err:
                raise SendLater(err) from err
            return True

        return await self.deliver_until(item, to.chat_id, attempt)

    def take_held(self, conversation_id: str) -> list[str]:
        """The held items of ``conversation_id`` (its window opened again), no longer held."""
        ids = [item_id for item_id, conv in self.held.items() if conv == conversation_id]
        for item_id in ids:
            del self.held[item_id]
        return ids

    async def tell_held(self, to: Address, conversation_id: str) -> None:
        """After held messages went out: how to get them on time, once per chat (and only without a template)."""
        if self.config.template.name:
            return
        if await asyncio.to_thread(self.flags.first_time, conversation_id, HELD_FLAG):
            await self.say(to, HELD_TEXT)

    async def answer_job(self, item: InboxItem) -> None:
        number = number_of(item.conversation_id)
        to = Address(number)
        await self.run_job(item, number, lambda text: self.deliver(item, to, text), lambda text: self.say(to, text))


def joinable(msg: WaMessage) -> bool:
    """A turn later messages may join, or a message that may join one (busy modes): a person's own text (no
    file, picture or voice note, no command)."""
    return msg.kind == "text" and msg.media is None and not msg.text.startswith("/")
