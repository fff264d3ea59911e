"""What the Signal bot sends on its own: notices to the owner (collectors, the morning digest) and
reminders to their chats."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from assistant_framework.config.settings import SignalSettings
from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.send import send_parts
from messaging_llm_bot.channels.signal.settings import chat_of_conversation, owner_of
from messaging_llm_bot.conversation.notices import notify_from_thread, send_digest
from messaging_llm_bot.conversation.reminders import DeliveryRefused
from messaging_llm_bot.conversation.runtime import Runtime

log = logging.getLogger(__name__)


class Notices:
    """Sends notices and reminders through ``client`` on the bot's event ``loop``."""

    def __init__(
        self,
        runtime: Runtime,
        client: SignalClient,
        settings: Callable[[], SignalSettings],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.runtime = runtime
        self.client = client
        self._settings = settings
        self._loop = loop

    async def send_notice(self, chat_id: Any, text: str) -> bool:
        """Send text to a ``sig:`` chat, or to the owner when ``chat_id`` is empty; True if it arrived."""
        chat = chat_of_conversation(str(chat_id)) if chat_id not in (None, "") else owner_of(self._settings())
        if not chat:
            return False
        try:
            await send_parts(self.client, chat, text)
            return True
        except (SignalRpcError, SignalUnavailable) as err:
            log.warning("signal: notice to %s failed: %s", chat, err)
            return False

    async def send_reminder(self, chat_id: object, text: str, conversation: object = None) -> bool:
        """Send a reminder to its ``sig:`` chat: True when it arrived, False to try again later (daemon gone,
        rate limited, no network); DeliveryRefused when signal-cli refused it for good (not a Signal user)."""
        chat = chat_of_conversation(str(chat_id))
        try:
            await send_parts(self.client, chat, text)
            return True
        except SignalRpcError as err:
            if not err.transient:
                types = ", ".join(sorted(t for t in err.result_types if t))
                reason = f"signal-cli refused it: {err.message}" + (f" ({types})" if types else "")
                raise DeliveryRefused(reason) from err
            # The scheduler warns once per reminder; each retry's cause goes to the log at INFO.
            log.info("signal: reminder to %s cannot be sent for now: %s", chat, err)
        except SignalUnavailable as err:
            log.info("signal: reminder to %s failed: %s", chat, err)
        return False

    async def _to_owner(self, text: str) -> bool:
        return await self.send_notice(None, text)

    def notify_from_thread(self, collector_name: str, text: str) -> None:
        """Collector callback (background thread): a short notice to the owner (conversation/notices.py)."""
        notify_from_thread(self._loop, self._to_owner, collector_name, text)

    async def morning_digest(self) -> None:
        """The digest to the owner (the process's scheduler calls it daily: conversation/job_router.py)."""
        await send_digest(self.runtime.workspace, self.runtime.settings.runtime.timezone, self._to_owner)
