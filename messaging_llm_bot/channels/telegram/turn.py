"""One durable inbox item answered on conversation/chat_turns.py's turn: here, the message read (its album, its
forum topic, someone else's words marked), the live message, the owner's buttons, a spoken reply's voice notes;
a job run's reply in the topic the job was made in.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import telegram
from telegram import InputFile, Update
from telegram.error import BadRequest, NetworkError, TelegramError

from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.channels.contract import Address
from messaging_llm_bot.channels.telegram.access import Access
from messaging_llm_bot.channels.telegram.approval import TelegramApprovals
from messaging_llm_bot.channels.telegram.format import CAPABILITIES
from messaging_llm_bot.channels.telegram.media import MAX_DOWNLOAD_BYTES, file_of, message_kind
from messaging_llm_bot.channels.telegram.progress import TelegramLive
from messaging_llm_bot.channels.telegram.send import (
    TelegramDeliveryError,
    TelegramOut,
    address,
    refused_for_good,
    topic_number,
)
from messaging_llm_bot.channels.telegram.settings import (
    album_key,
    chat_of,
    message_of,
    strip_mention,
    topic_in,
    topic_of,
)
from messaging_llm_bot.conversation.albums import Albums
from messaging_llm_bot.conversation.chat_turns import ChatTurns, Shows, TurnMessage
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.media_in import files_saver, transcribe_file
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import Received, outside_name
from messaging_llm_bot.conversation.voice import VoiceNote

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from messaging_llm_bot.agent.guard import ApproveCallback

log = logging.getLogger(__name__)


class TelegramTurns(ChatTurns):
    """Runs turns for the Telegram frontend; one instance per running bot."""

    platform: TelegramOut
    SEND_ERRORS = (TelegramDeliveryError, TelegramError, DeliveryError)
    MAX_FILE_BYTES = CAPABILITIES.max_file_bytes
    VOICE_REPLIES = True
    TRIES_BEFORE_HELD = 1  # each part is sent with retries of its own (send.py)
    PLATFORM = "Telegram"

    def __init__(
        self, runtime: Runtime, inbox: Inbox, bot: telegram.Bot, approvals: TelegramApprovals, access: Access
    ) -> None:
        super().__init__(runtime, inbox, "telegram")
        self.bot = bot
        self.platform = TelegramOut(bot)
        self.approvals = approvals
        self.access = access  # the owner, and where the owner's data is seen (the current record: ``/reload``)
        # Photos sent together: one turn (conversation/albums.py); the intake notes each part as it is stored.
        self.albums: Albums[InboxItem] = Albums(album_key, lambda item: item.item_id)

    async def answer(self, item: InboxItem) -> None:
        """``item`` answered with the rest of its album in one turn (``Albums.answer``)."""
        answer = super().answer
        await self.albums.answer(item, lambda: answer(item))

    def address_of(self, conversation_id: str) -> Address:
        """A job run's chat, in the topic the job was made in (``TelegramOut``: the General once it is gone)."""
        chat_id = chat_of(conversation_id)
        return address(chat_id, topic_in(conversation_id, chat_id))

    def job_chat(self, to: Address) -> int:
        return int(to.chat_id)

    def message(self, item: InboxItem) -> TurnMessage:
        fetched = item.received  # the update as fetched in this run, else decoded from what was stored
        update = fetched if isinstance(fetched, Update) else Update.de_json(item.payload, self.bot)
        message = message_of(update)
        parts = self.albums.rest(item)
        user, private = message.from_user, message.chat.type == "private"
        to = address(message.chat_id, topic_of(message))  # a forum topic's message is answered in that topic
        return TurnMessage(
            to,
            user.id if user else None,
            self.access.owner_data(update),
            self.access.from_owner(update),
            self._received(message, parts, to),
            message.message_id,
            joinable(message),
            chat_id=message.chat_id,
            # Quote the question only in groups, where several people talk; private chats stay clean.
            reply_to=None if private else str(message.message_id),
            voice=message_kind(message) == "voice",
            also=tuple(part.item_id for part in parts),
        )

    async def shows(self, item: InboxItem, msg: TurnMessage) -> Shows:
        # In the forum topic: status and typing show there.
        live = TelegramLive(self.bot, int(msg.to.chat_id), topic_number(msg.to))
        settings = self.runtime.settings.telegram  # llm.stream asks the model for a stream; telegram.stream shows it
        return self.live_progress(
            item,
            live,
            show_status=settings.progress,
            stream=settings.stream,
            edit_interval=settings.edit_interval_seconds,
        )

    def approver(self, item: InboxItem, msg: TurnMessage, loop: asyncio.AbstractEventLoop) -> ApproveCallback:
        return self.approvals.approver(self.bot, int(msg.to.chat_id), loop, topic_number(msg.to))

    def part_number(self, index: int, message_id: str) -> int:
        return int(message_id)

    async def not_taken(self, to: Address, live: str) -> None:
        """A streamed message that could not become the first part goes: the reply is sent whole after it."""
        await TelegramLive(self.bot, int(to.chat_id)).delete(int(live))

    def send_failed(self, item: InboxItem, to: Address, err: Exception) -> bool:
        cause = err.cause if isinstance(err, TelegramDeliveryError) else err
        if isinstance(cause, NetworkError) and not isinstance(cause, BadRequest):
            return super().send_failed(item, to, err)  # tried again later (its parts retried already)
        raise DeliveryError(str(err)) from err

    def undelivered(self, err: Exception) -> DeliveryError:
        cause = err.cause if isinstance(err, TelegramDeliveryError) else err
        return DeliveryError(f"Telegram refused it: {cause}", for_good=refused_for_good(err))

    def _received(self, message: telegram.Message, parts: Sequence[InboxItem], to: Address) -> Received:
        """The message (with the rest of its album) as the model reads it (conversation/turn.py)."""
        bot, kind = self.bot, message_kind(message)
        # Someone else's words passed on by the user (a forward, an inline bot's text): data, never instructions.
        origin = outside_origin(message)
        album = [message, *(message_of(Update.de_json(part.payload, bot)) for part in parts)]
        files = [file_of(bot, one) for one in album]  # each with its own caption, in order
        settings = self.runtime.settings
        save = files_saver(files, settings, limit=MAX_DOWNLOAD_BYTES, source="Telegram", origin=origin or "")
        # The transcript as it is (no Markdown), in as many parts as it needs.
        echo = functools.partial(self.platform.send_plain, to, reply_to=str(message.message_id))
        label = {"text": "Message", "voice": "Voice note (transcript)"}.get(kind)
        return Received(
            kind,
            strip_mention(message.text or "", bot.username or "") if kind == "text" else "",
            save,
            lambda config: transcribe_file(files[0], config, MAX_DOWNLOAD_BYTES),
            echo,
            f"{label} {origin}" if label and origin else None,  # the agent quotes it under this label
        )

    async def send_voice(self, to: Address, index: int, note: VoiceNote) -> None:
        await self.bot.send_voice(
            int(to.chat_id),
            InputFile(note.audio, filename=f"reply-{index + 1}.ogg"),
            duration=math.ceil(note.seconds) if note.seconds else None,
            message_thread_id=topic_number(to),
        )


def joinable(message: telegram.Message) -> bool:
    """A turn later messages may join (busy modes): a text of a person's own, in a private chat."""
    return message.chat.type == "private" and message_kind(message) == "text" and outside_origin(message) is None


def outside_origin(message: telegram.Message) -> str | None:
    """Where a message's content comes from when it is not the sender's own words: ``"forwarded from
    Mallory"``, ``"forwarded from channel News"``, ``"sent via @somebot"``; None for the sender's own."""
    origin = message.forward_origin
    if origin is not None:
        user = getattr(origin, "sender_user", None)
        chat = getattr(origin, "sender_chat", None) or getattr(origin, "chat", None)
        if user is not None:
            who = user.full_name or "a user"
        elif chat is not None:
            who = f"{chat.type} {chat.title or chat.username or chat.id}"
        else:
            who = getattr(origin, "sender_user_name", None) or "someone"
        return f"forwarded from {outside_name(who)}"
    if message.is_automatic_forward:  # a channel post copied into its discussion group
        return "forwarded from the linked channel"
    if message.via_bot is not None:  # an inline bot wrote it; the user only picked it
        return f"sent via @{outside_name(message.via_bot.username or str(message.via_bot.id))}"
    return None
