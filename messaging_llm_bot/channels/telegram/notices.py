"""What the bot sends unasked: reminders to the chat they were set in, collector notices and the morning
digest to the owner's private chat (the owner's data: never to the other allowed users)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import telegram
from telegram.error import TelegramError

from messaging_llm_bot.channels.telegram.send import (
    TelegramDeliveryError,
    refused_for_good,
    send_markdown,
    topic_gone,
)
from messaging_llm_bot.channels.telegram.settings import telegram_chat_id, topic_in
from messaging_llm_bot.conversation.notices import notify_from_thread
from messaging_llm_bot.conversation.reminders import DeliveryRefused

log = logging.getLogger(__name__)


class Notices:
    """Sends notices through the running bot; ``bot`` and ``loop`` are read when sending (set at start)."""

    def __init__(
        self,
        bot: Callable[[], telegram.Bot],
        loop: Callable[[], asyncio.AbstractEventLoop | None],
        owner: Callable[[], int | None],
        digest: Callable[[], str],
    ) -> None:
        self._bot, self._loop, self._owner, self._digest = bot, loop, owner, digest

    async def send_notice(self, chat_id: int | str | None, text: str) -> bool:
        """Send plain text to one chat, or (no chat) to the owner's private chat; True if all arrived."""
        owner = self._owner()
        # Collector notices and the digest are the owner's data: never to the other allowed users.
        targets = [telegram_chat_id(chat_id)] if chat_id not in (None, "") else ([owner] if owner is not None else [])
        ok = bool(targets)
        for target in targets:
            try:
                await send_markdown(self._bot(), target, text)
            except TelegramError as err:
                log.warning("telegram: notice to chat %s failed: %s", target, err)
                ok = False
            except Exception as err:  # noqa: BLE001 - TelegramDeliveryError and friends
                log.warning("telegram: notice to chat %s failed: %s", target, err)
                ok = False
        return ok

    async def send_reminder(self, chat_id: object, text: str, conversation: object = None) -> bool:
        """Send a reminder to its chat, in the forum topic it was set in (``conversation``): True when it
        arrived, False to try again later (network, 429, 5xx); DeliveryRefused when Telegram refused it for good
        (the user blocked the bot, chat not found). A topic closed or deleted since: the chat's General."""
        try:
            target = telegram_chat_id(str(chat_id))
        except ValueError:
            raise DeliveryRefused(f"{chat_id!r} is not a Telegram chat id") from None
        topic = topic_in(conversation, target)
        try:
            try:
                await send_markdown(self._bot(), target, text, topic=topic)
            except TelegramDeliveryError as err:
                if topic is None or not topic_gone(err) or err.part_index > 0:
                    raise
                log.warning(
                    "telegram: reminder for topic %s of chat %s goes to the chat's General: %s",
                    topic,
                    target,
                    err.cause,
                )
                await send_markdown(self._bot(), target, text)
            return True
        except TelegramDeliveryError as err:
            if refused_for_good(err):
                raise DeliveryRefused(f"Telegram refused it: {err.cause}") from err
            # The scheduler warns once per reminder; each retry's cause goes to the log at INFO.
            log.info("telegram: reminder to chat %s failed: %s", chat_id, err)
            return False

    async def _to_owner(self, text: str) -> bool:
        return await self.send_notice(None, text)

    def notify_from_thread(self, collector_name: str, text: str) -> None:
        """Collector callback (background thread): a short notice to the owner (conversation/notices.py)."""
        notify_from_thread(self._loop(), self._to_owner, collector_name, text)

    async def morning_digest(self) -> None:
        """The digest to the owner (the process's scheduler calls it daily: conversation/job_router.py)."""
        await self._to_owner(await asyncio.to_thread(self._digest))
