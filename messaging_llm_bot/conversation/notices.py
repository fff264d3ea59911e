"""What every channel sends unasked, the same way on each: a collector's notice, handed over from its
background thread, and the morning digest, to the owner's own chat (the owner's data never goes to the other
allowed users); a reminder to the chat it was set in. The channel gives only how a text reaches one of its
chats (``SendTo``): ``ChannelNotices`` is the rest."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.commands import collector_notice
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.digest import build_digest
from messaging_llm_bot.conversation.reminders import DeliveryRefused

log = logging.getLogger(__name__)

#: Sends a text to the owner's own chat on the channel's loop; True when it arrived.
SendToOwner = Callable[[str], Coroutine[Any, Any, bool]]


def notify_from_thread(loop: asyncio.AbstractEventLoop | None, send: SendToOwner, collector: str, text: str) -> None:
    """A collector's notice (called from its background thread) sent to the owner on the channel's ``loop``;
    nothing when the channel is not running (no loop, or closed)."""
    if loop is None or loop.is_closed():
        return
    notice = send(collector_notice(collector, text))
    try:
        asyncio.run_coroutine_threadsafe(notice, loop)
    except RuntimeError:  # closed meanwhile: the channel is stopping
        notice.close()


def digest_now(workspace: Workspace, timezone: str) -> str:
    """The /now digest for this moment in ``timezone`` (no model call)."""
    return build_digest(workspace, datetime.now(ZoneInfo(timezone)), timezone)


async def send_digest(workspace: Workspace, timezone: str, send: SendToOwner) -> None:
    """The morning digest to the owner."""
    await send(await asyncio.to_thread(digest_now, workspace, timezone))


#: Sends Markdown to one chat of the channel (its id as stored: ``tg:7``, ``sig:+49...``, ``7``), in the thread
#: ``conversation`` names where the platform has them; raises ``DeliveryError`` (``for_good`` when sending
#: again cannot help: blocked, not a user of the platform, not a chat id of this channel).
SendTo = Callable[[str, str, object], Awaitable[None]]


async def send_reminder_by(
    channel: str, chat_id: object, send: Callable[[], Awaitable[object]], *, later: type[Exception], refuser: str
) -> bool:
    """A due reminder sent by an adapter whose ``send`` (its ``send_text`` to the reminder's chat) raises
    ``DeliveryError`` when the platform refused it and ``later``, its own error, when it cannot be reached now
    (Discord, Slack, WhatsApp): True when it arrived; False to try again at the next poll (the cause at INFO: the
    scheduler warns once per reminder); ``DeliveryRefused`` ("``refuser`` refused it: ...") when sending again
    cannot help."""
    try:
        await send()
        return True
    except DeliveryError as err:
        raise DeliveryRefused(f"{refuser} refused it: {err}") from err
    except later as err:
        log.info("%s: reminder to %s cannot be sent for now: %s", channel, chat_id, err)
        return False


class ChannelNotices:
    """A channel's notices, reminders and morning digest; ``owner`` is the owner's own chat (None: none set),
    ``loop`` the channel's event loop (None before it runs), both read when sending."""

    def __init__(
        self,
        channel: str,
        send: SendTo,
        owner: Callable[[], str | None],
        loop: Callable[[], asyncio.AbstractEventLoop | None],
        digest: Callable[[], str],
    ) -> None:
        self.channel = channel
        self._send, self._owner, self._loop, self._digest = send, owner, loop, digest

    async def send_notice(self, chat_id: object, text: str) -> bool:
        """Send text to one chat, or (no chat) to the owner's own chat; True if it arrived."""
        chat = str(chat_id) if chat_id not in (None, "") else self._owner()
        if not chat:
            return False
        try:
            await self._send(chat, text, None)
            return True
        except DeliveryError as err:
            log.warning("%s: notice to chat %s failed: %s", self.channel, chat, err)
            return False

    async def send_reminder(self, chat_id: object, text: str, conversation: object = None) -> bool:
        """Send a reminder to its chat (in the thread it was set in): True when it arrived, False to try again
        later (network, rate limits, the platform's daemon gone); ``DeliveryRefused`` when the platform refused
        it for good."""
        try:
            await self._send(str(chat_id), text, conversation)
            return True
        except DeliveryError as err:
            if err.for_good:
                raise DeliveryRefused(str(err)) from err
            # The scheduler warns once per reminder; each retry's cause goes to the log at INFO.
            log.info("%s: reminder to chat %s cannot be sent for now: %s", self.channel, chat_id, err)
            return False

    async def _to_owner(self, text: str) -> bool:
        return await self.send_notice(None, text)

    def notify_from_thread(self, collector_name: str, text: str) -> None:
        """Collector callback (background thread): a short notice to the owner."""
        notify_from_thread(self._loop(), self._to_owner, collector_name, text)

    async def morning_digest(self) -> None:
        """The digest to the owner (the process's scheduler calls it daily: conversation/job_router.py)."""
        await self._to_owner(await asyncio.to_thread(self._digest))
