"""How a notice, a reminder or the digest reaches a Telegram chat (conversation/notices.py is the rest): in the
forum topic it was set in, the chat's General once that topic is closed or deleted."""

from __future__ import annotations

import logging

import telegram
from telegram.error import TelegramError

from messaging_llm_bot.channels.telegram.send import TelegramDeliveryError, refused_for_good, send_markdown, topic_gone
from messaging_llm_bot.channels.telegram.settings import telegram_chat_id, topic_in
from messaging_llm_bot.conversation.delivery import DeliveryError

log = logging.getLogger(__name__)


async def send_to(bot: telegram.Bot, chat_id: str, text: str, conversation: object = None) -> None:
    """Send Markdown to a chat (``7``, ``tg:7``), in ``conversation``'s forum topic; ``DeliveryError`` (for
    good when Telegram refused it: the user blocked the bot, chat not found) when it did not arrive."""
    try:
        target = telegram_chat_id(chat_id)
    except ValueError:
        raise DeliveryError(f"{chat_id!r} is not a Telegram chat id", for_good=True) from None
    topic = topic_in(conversation, target)
    try:
        try:
            await send_markdown(bot, target, text, topic=topic)
        except TelegramDeliveryError as err:
            if topic is None or not topic_gone(err) or err.part_index > 0:
                raise
            log.warning(
                "telegram: reminder for topic %s of chat %s goes to the chat's General: %s", topic, target, err.cause
            )
            await send_markdown(bot, target, text)
    except TelegramDeliveryError as err:
        raise DeliveryError(f"Telegram refused it: {err.cause}", for_good=refused_for_good(err)) from err
    except TelegramError as err:
        raise DeliveryError(f"Telegram refused it: {err}") from err
