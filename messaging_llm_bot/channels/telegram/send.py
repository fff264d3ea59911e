"""Deliver model replies to Telegram: parts with entities, plain fallback, flood-wait and network retries; edits;
files out (a picture under 10 MB as a photo, anything else as a document); the contract's sends for the shared
turn (``TelegramOut``); notices, reminders and the digest in the forum topic they were set in (the chat's General
once it is gone)."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable

import telegram
from telegram import InputFile, MessageEntity, ReplyParameters
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError

from messaging_llm_bot.channels.telegram.format import MAX_MESSAGE_UTF16, plain_parts, render_markdown
from messaging_llm_bot.channels.telegram.ratelimit import BudgetSkipped, optional_call, retry_after_seconds
from messaging_llm_bot.channels.telegram.settings import telegram_chat_id, topic_in, topic_of
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.markup import Entity, MessagePart, fit_text
from messaging_llm_bot.conversation.outgoing import Address, OutgoingFile, Sent, TextOut

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

PartSentCallback = Callable[[int, int], "Awaitable[None] | None"]


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


async def send_markdown(
    bot: telegram.Bot,
    chat_id: int,
    markdown: str,
    *,
    reply_to_message_id: int | None = None,
    skip_parts: int = 0,
    on_part_sent: PartSentCallback | None = None,
    topic: int | None = None,
) -> list[int]:
    """Render ``markdown`` and send its parts in order; returns the ids of the parts sent by this call.

    ``skip_parts`` resumes after a crash (parts already delivered are not re-sent);
    ``on_part_sent(index, message_id)`` runs after each delivery. Only part 0 replies to
    ``reply_to_message_id``. ``topic``: the forum topic the parts go to (``message_thread_id``).
    Raises TelegramDeliveryError when a part cannot be delivered.
    """
    parts = render_markdown(markdown)
    sent: list[int] = []
    for index, part in enumerate(parts):
        if index < skip_parts:
            continue
        reply_to = reply_to_message_id if index == 0 else None
        message_id = await _deliver_part(bot, chat_id, part, index, len(parts), reply_to, topic)
        sent.append(message_id)
        if on_part_sent is not None:
            result = on_part_sent(index, message_id)
            if inspect.isawaitable(result):
                await result
    return sent


async def send_plain(
    bot: telegram.Bot, chat_id: int, text: str, *, reply_to_message_id: int | None = None, topic: int | None = None
) -> list[int]:
    """Send ``text`` as it is (no Markdown), in as many parts as it needs; only part 0 replies.

    Same retries as ``send_markdown``; raises TelegramDeliveryError when a part cannot be delivered.
    """
    parts = plain_parts(text)
    sent = []
    for index, part in enumerate(parts):
        reply_to = reply_to_message_id if index == 0 else None
        sent.append(await _deliver_part(bot, chat_id, MessagePart(part, []), index, len(parts), reply_to, topic))
    return sent


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
            await asyncio.sleep(min(BACKOFF_BASE_SECONDS * 2 ** (network_failures - 1), BACKOFF_MAX_SECONDS))
        except TelegramError as err:  # Forbidden, ChatMigrated, InvalidToken...: retrying cannot help
            raise TelegramDeliveryError(chat_id, index, count, err) from err


async def answer_update(update: telegram.Update, bot: telegram.Bot, markdown: str) -> None:
    """Send ``markdown`` to the chat (and forum topic) an update came from; in a group it quotes the message."""
    chat = update.effective_chat
    reply_to = update.effective_message.message_id if chat.type != "private" else None
    topic = topic_of(update.effective_message)  # a command in a forum topic is answered there
    await send_markdown(bot, chat.id, markdown, reply_to_message_id=reply_to, topic=topic)


def fit_plain_text(text: str, limit: int = MAX_MESSAGE_UTF16) -> str:
    """Shorten ``text`` to ``limit`` UTF-16 units, ending with an ellipsis when cut."""
    return fit_text(text, limit)


async def edit_text_safely(
    bot: telegram.Bot,
    chat_id: int,
    message_id: int,
    text: str,
    optional: bool = False,
    entities: list[Entity] | None = None,
    tries: int = 2,
) -> bool:
    """Edit a sent message to ``text`` (formatted by ``entities``: plain again when Telegram refuses them);
    True if it shows that text, never raises. ``optional`` edits (progress) give way to replies under load
    (``ratelimit.BudgetSkipped``: False, nothing sent)."""
    text = fit_plain_text(text)
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


async def or_general(
    send: Callable[[int | None], Awaitable[object]], topic: int | None, what: str, *, resumes: bool = False
) -> None:
    """``send(topic)``; again in the chat's General (``send(None)``) when Telegram says the forum topic is closed
    or deleted, before any part went out, or at any part when ``send`` resumes (it skips the parts sent)."""
    try:
        await send(topic)
    except TelegramDeliveryError as err:
        if topic is None or not topic_gone(err) or (err.part_index > 0 and not resumes):
            raise
        log.warning("telegram: %s for topic %s goes to the chat's General: %s", what, topic, err.cause)
        await send(None)


async def send_to(bot: telegram.Bot, chat_id: str, text: str, conversation: object = None) -> None:
    """A notice, a reminder or the digest (conversation/notices.py) to a chat (``7``, ``tg:7``), in
    ``conversation``'s forum topic, the chat's General once that topic is gone; ``DeliveryError`` (for good when
    Telegram refused it: the user blocked the bot, chat not found) when it did not arrive."""
    try:
        target = telegram_chat_id(chat_id)
    except ValueError:
        raise DeliveryError(f"{chat_id!r} is not a Telegram chat id", for_good=True) from None

    async def send(topic: int | None) -> None:
        await send_markdown(bot, target, text, topic=topic)

    try:
        await or_general(send, topic_in(conversation, target), f"reminder of chat {target}")
    except TelegramDeliveryError as err:
        raise DeliveryError(f"Telegram refused it: {err.cause}", for_good=refused_for_good(err)) from err
    except TelegramError as err:
        raise DeliveryError(f"Telegram refused it: {err}") from err


def topic_number(to: Address) -> int | None:
    """The forum topic of an ``Address`` (``message_thread_id``), None for a chat's General or no forum."""
    return None if to.thread_id is None else int(to.thread_id)


class TelegramOut:
    """The contract's sends over the Bot API (conversation/chat_turns.py's ``Platform``): an ``Address`` is a
    chat's id and its forum topic's; message ids are the Bot API's numbers, as text."""

    def __init__(self, bot: telegram.Bot) -> None:
        self.bot = bot

    async def send_text(self, to: Address, text: TextOut) -> Sent:
        """The parts from ``text.skip_parts`` on; raises ``TelegramDeliveryError`` when one cannot go."""

        async def sent(index: int, message_id: int) -> None:
            if text.on_part_sent is not None:
                await text.on_part_sent(index, str(message_id))

        reply_to = int(text.reply_to) if text.reply_to else None
        ids = await send_markdown(
            self.bot,
            int(to.chat_id),
            text.markdown,
            reply_to_message_id=reply_to,
            skip_parts=text.skip_parts,
            on_part_sent=sent,
            topic=topic_number(to),
        )
        return Sent(tuple(str(one) for one in ids))

    async def edit_text(self, to: Address, message_id: str, markdown: str) -> bool:
        """The message shows ``markdown``'s first part, formatted; False if the edit did not land."""
        part = render_markdown(markdown)[0]
        chat = int(to.chat_id)
        return await edit_text_safely(self.bot, chat, int(message_id), part.text, entities=part.entities, tries=3)

    async def send_file(self, to: Address, file: OutgoingFile) -> Sent:
        """A JPEG, PNG or WebP under 10 MB as a photo (``sendPhoto``), anything else as a document
        (``sendDocument``); raises ``TelegramError`` when the Bot API refuses."""
        data = await asyncio.to_thread(file.path.read_bytes)
        upload, caption, topic = InputFile(data, filename=file.path.name), file.caption or None, topic_number(to)
        if file.kind == "photo" and len(data) <= MAX_PHOTO_BYTES:
            sent = await self.bot.send_photo(int(to.chat_id), upload, caption=caption, message_thread_id=topic)
        else:
            sent = await self.bot.send_document(int(to.chat_id), upload, caption=caption, message_thread_id=topic)
        return Sent((str(sent.message_id),))
