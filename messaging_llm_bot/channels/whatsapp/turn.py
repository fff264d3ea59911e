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
import logging
from collections.abc import Callable

from assistant_framework.config.settings import WhatsAppSettings
from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.channels.contract import Address, DeliveryError
from messaging_llm_bot.channels.whatsapp.channel import OutsideWindow, WhatsAppChannel, default_name
from messaging_llm_bot.channels.whatsapp.format import CAPABILITIES
from messaging_llm_bot.channels.whatsapp.graph import GraphUnavailable
from messaging_llm_bot.channels.whatsapp.message import WaMessage, message_of_payload
from messaging_llm_bot.channels.whatsapp.settings import number_of
from messaging_llm_bot.conversation.chat_turns import ChatTurns, ReadInput, Shows, TurnMessage
from messaging_llm_bot.conversation.media_in import attachment_input
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import Received, TurnInput

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


class WhatsAppTurns(ChatTurns):
    """Runs turns for the WhatsApp channel (conversation/chat_turns.py); one per running channel. The answer
    cannot grow in place: it goes out whole at the end."""

    platform: WhatsAppChannel
    REREAD = True  # answered meanwhile: a job run handed over again, a held reply released twice
    SEND_ERRORS = (GraphUnavailable, DeliveryError, OutsideWindow)
    MAX_FILE_BYTES = CAPABILITIES.max_file_bytes

    def __init__(
        self, runtime: Runtime, inbox: Inbox, channel: WhatsAppChannel, config: Callable[[], WhatsAppSettings]
    ) -> None:
        super().__init__(runtime, inbox, "whatsapp")  # the turns running, the pool, the chat's flags, busy modes
        self.platform, self.reply_approvals = channel, channel.approvals
        self._config = config
        self.held: dict[str, str] = {}  # item id -> conversation: replies waiting for the window to open

    @property
    def config(self) -> WhatsAppSettings:
        return self._config()

    def address_of(self, conversation_id: str) -> Address:
        return Address(number_of(conversation_id))

    def message(self, item: InboxItem) -> TurnMessage | None:
        msg = message_of_payload(item.payload)
        if msg is None:
            return None
        owner_chat = self.config.is_owner(msg.sender)  # only the owner's own chat sees the owner's data
        received = self._input(item, msg, owner_chat) if msg.media is not None or not msg.readable else None
        return TurnMessage(
            Address(msg.sender),
            msg.sender,
            owner_chat,
            owner_chat,
            received or Received("text", msg.text),
            msg.message_id,
            joinable(msg),
            reply_to=msg.message_id,
        )

    def _input(self, item: InboxItem, msg: WaMessage, owner_chat: bool) -> ReadInput:
        """A kind not taken, or the attachment (without transcription a voice note is saved like any file)."""

        async def read() -> TurnInput | str:
            media = msg.media
            if not msg.readable or media is None:
                return UNSUPPORTED.format(kind=msg.kind)
            return await attachment_input(
                self,
                item.conversation_id,
                owner_chat,
                media,
                msg.text,
                lambda: self.platform.download(media, MAX_FILE_IN_BYTES),
                lambda mime: media.name or default_name(media, mime),
            )

        return read

    async def shows(self, item: InboxItem, msg: TurnMessage) -> Shows | None:
        """The read receipt, with "typing…" until the reply (or 25 s)."""
        try:
            await self.platform.client.mark_read(str(msg.message_id), typing=self.config.typing)
        except (GraphUnavailable, DeliveryError) as err:
            log.info("whatsapp: could not mark %s read: %s", msg.message_id, err)
        return None

    def send_failed(self, item: InboxItem, to: Address, err: Exception) -> bool:
        """Outside the 24-hour window without a template the reply is held (``held``): the item stays."""
        if not isinstance(err, OutsideWindow):
            return super().send_failed(item, to, err)
        if item.item_id not in self.held:  # a job run is handed over again at each look: said once
            self.held[item.item_id] = item.conversation_id
            log.warning(
                "whatsapp: %s waits for %s's next message (more than 24 hours since their last one and no "
                "whatsapp.template)",
                item.item_id,
                to.chat_id,
            )
        return False

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


def joinable(msg: WaMessage) -> bool:
    """A turn later messages may join, or a message that may join one (busy modes): a person's own text (no
    file, picture or voice note, no command)."""
    return msg.kind == "text" and msg.media is None and not msg.text.startswith("/")
