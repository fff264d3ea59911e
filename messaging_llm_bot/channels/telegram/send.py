"""The contract's sends over the Bot API (``TelegramOut``; docs/telegram.md, "Replies"): a forum topic's message goes
to the chat's General once the topic is gone."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import telegram
from telegram import InputFile, MessageEntity, ReplyParameters
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError

from messaging_llm_bot.channels.telegram.format import MAX_MESSAGE_UTF16, plain_parts, render_markdown
from messaging_llm_bot.channels.telegram.ratelimit import BudgetSkipped, optional_call, retry_after_seconds
from messaging_llm_bot.conversation.markup import Entity, MessagePart, fit_text
from messaging_llm_bot.conversation.outage import Backoff
from messaging_llm_bot.conversation.outgoing import Address, OutgoingFile, Sent, TextOut, send_parts

log = logging.getLogger(__name__)

NETWORK_TRIES = 4
BACKOFF_BASE_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 4.0
MAX_FLOOD_WAITS = 5
_ENTITY_ERROR_HINTS = ("entit", "parse", "can't find end")
#: How Telegram says a forum topic cannot take messages: closed, deleted, or never there.
_TOPIC_GONE_HINTS = ("thread not found", "topic_closed", "topic_deleted", "topic_id_invalid")

#: The Bot API's bound on an uploaded photo; a bigger picture goes as a document.
MAX_PHOTO_BYTES = 10_000_000


class TelegramDeliveryError(RuntimeError):
    """A reply part could not be delivered; names the chat and the part index."""

    def __init__(self, chat_id: int, part_index: int, part_count: int, cause: BaseException) -> None:
        super().__init__(
            f"telegram: could not deliver part {part_index + 1}/{part_count} (index {part_index}) "
            f"to chat {chat_id}: {type(cause).__name__}: {cause}"
        )
        self.chat_id, self.part_index, self.part_count, self.cause = chat_id, part_index, part_count, cause


def refused_for_good(error: BaseException) -> bool:
    """True when Telegram refused a message to its chat for good (Forbidden: the user blocked the bot or it
    was removed from the group; BadRequest: chat not found); network errors, 429 and 5xx are temporary."""
    cause = error.cause if isinstance(error, TelegramDeliveryError) else error
    return isinstance(cause, (Forbidden, BadRequest))


def topic_gone(error: BaseException) -> bool:
    """True when Telegram refused a message because its forum topic is closed or deleted."""
    cause = error.cause if isinstance(error, TelegramDeliveryError) else error
    return isinstance(cause, BadRequest) and any(hint in str(cause).lower() for hint in _TOPIC_GONE_HINTS)


def is_entity_error(error: BaseException) -> bool:
    """True when Telegram rejected the formatting (entities/markup) rather than the message itself."""
    text = str(error).lower()
    return any(hint in text for hint in _ENTITY_ERROR_HINTS)


async def _deliver_part(
    bot: telegram.Bot,
    chat_id: int,
    part: MessagePart,
    index: int,
    count: int,
    reply_to: int | None,
    topic: int | None = None,
) -> int:
    """Send one part, retrying flood waits and network errors; falls back to plain text on entity errors."""
    entities = [MessageEntity.de_json(dict(e), bot) for e in part.entities] or None
    reply = ReplyParameters(message_id=reply_to, allow_sending_without_reply=True) if reply_to else None
    network_failures = flood_waits = 0
    backoff = Backoff(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS)  # the wait after a network error, doubling
    while True:
        try:
            message = await bot.send_message(
                chat_id=chat_id, text=part.text, entities=entities, reply_parameters=reply, message_thread_id=topic
            )
            return message.message_id
        except RetryAfter as err:
            flood_waits += 1
            if flood_waits > MAX_FLOOD_WAITS:
                raise TelegramDeliveryError(chat_id, index, count, err) from err
            await asyncio.sleep(retry_after_seconds(err.retry_after))
        except BadRequest as err:  # before NetworkError: BadRequest subclasses it
            if entities and is_entity_error(err):
                log.warning(
                    "telegram: chat %s part %d rejected formatting (%s); resending as plain text", chat_id, index, err
                )
                entities = None
                continue
            raise TelegramDeliveryError(chat_id, index, count, err) from err
        except NetworkError as err:  # includes TimedOut; a timed-out send may rarely have landed already
            network_failures += 1
            if network_failures >= NETWORK_TRIES:
                raise TelegramDeliveryError(chat_id, index, count, err) from err
            await asyncio.sleep(backoff.next())
        except TelegramError as err:  # Forbidden, ChatMigrated, InvalidToken...: retrying cannot help
            raise TelegramDeliveryError(chat_id, index, count, err) from err


async def edit_text_safely(
    bot: telegram.Bot,
    chat_id: int,
    message_id: int,
    text: str,
    optional: bool = False,
    entities: list[Entity] | None = None,
    tries: int = 2,
) -> bool:
    """Edit a sent message to ``text`` (formatted by ``entities``: plain again when Telegram refuses them); True if
    it shows that text, never raises. ``optional`` edits (progress) give way to replies under load (False)."""
    text = fit_text(text, MAX_MESSAGE_UTF16)
    if not text.strip():
        return False
    extra = optional_call(bot) if optional else {}
    formatted = [MessageEntity.de_json(dict(e), bot) for e in entities or ()] or None
    for attempt in range(tries):
        try:
            await bot.edit_message_text(text=text, chat_id=chat_id, message_id=message_id, entities=formatted, **extra)
            return True
        except BudgetSkipped:
            return False
        except RetryAfter as err:
            if attempt == tries - 1:
                return False
            await asyncio.sleep(retry_after_seconds(err.retry_after))
        except BadRequest as err:
            if "not modified" in str(err).lower():
                return True
            if formatted and is_entity_error(err):
                formatted = None
                continue
            log.info("telegram: edit of message %s in chat %s refused: %s", message_id, chat_id, err)
            return False
        except Exception as err:  # noqa: BLE001 - edits are best effort by contract
            log.info("telegram: edit of message %s in chat %s failed: %s", message_id, chat_id, type(err).__name__)
            return False
    return False


def topic_number(to: Address) -> int | None:
    """The forum topic of an ``Address`` (``message_thread_id``), None for a chat's General or no forum."""
    return None if to.thread_id is None else int(to.thread_id)


def address(chat_id: int, topic: int | None = None) -> Address:
    """The ``Address`` of a chat, or of a forum topic in it."""
    return Address(str(chat_id), None if topic is None else str(topic))


class TelegramOut:
    """The contract's sends (conversation/chat_turns.py's ``Platform``): an ``Address`` is a chat's id and its forum
    topic's; message ids are the Bot API's numbers, as text."""

    def __init__(self, bot: telegram.Bot) -> None:
        self.bot = bot

    async def send_text(self, to: Address, text: TextOut) -> Sent:
        """``text``'s Markdown as entities (``send_parts``); raises ``TelegramDeliveryError`` when a part cannot go."""
        return await self._send(to, render_markdown(text.markdown), text)

    async def send_plain(self, to: Address, text: str, reply_to: str | None = None) -> Sent:
        """``text`` as it is (no Markdown), in as many parts as it needs; only the first replies. Same retries."""
        return await self._send(to, [MessagePart(part, []) for part in plain_parts(text)], TextOut(text, reply_to))

    async def _send(self, to: Address, parts: list[MessagePart], text: TextOut) -> Sent:
        """The parts in ``to``'s forum topic; from one Telegram refuses there (the topic closed or deleted) on, in
        the chat's General."""
        chat, topic = int(to.chat_id), topic_number(to)

        async def send(index: int, part: MessagePart, reply_to: str | None) -> str:
            quoted = int(reply_to) if reply_to else None
            return str(await _deliver_part(self.bot, chat, part, index, len(parts), quoted, topic))

        try:
            return await send_parts(parts, text, send)
        except TelegramDeliveryError as err:
            if topic is None or not topic_gone(err):
                raise
            log.warning("telegram: a message for topic %s goes to the chat's General: %s", topic, err.cause)
            return await self._send(Address(to.chat_id), parts, replace(text, skip_parts=err.part_index))

    async def edit_text(self, to: Address, message_id: str, markdown: str) -> bool:
        """The message shows ``markdown``'s first part, formatted; False if the edit did not land."""
        part = render_markdown(markdown)[0]
        chat = int(to.chat_id)
        return await edit_text_safely(self.bot, chat, int(message_id), part.text, entities=part.entities, tries=3)

    async def send_file(self, to: Address, file: OutgoingFile) -> Sent:
        """A JPEG, PNG or WebP under 10 MB as a photo (``sendPhoto``), anything else as a document."""
        data = await asyncio.to_thread(file.path.read_bytes)
        upload, caption, topic = InputFile(data, filename=file.path.name), file.caption or None, topic_number(to)
        send = self.bot.send_photo if file.kind == "photo" and len(data) <= MAX_PHOTO_BYTES else self.bot.send_document
        sent = await send(int(to.chat_id), upload, caption=caption, message_thread_id=topic)
        return Sent((str(sent.message_id),))
