"""Every mail the channel sends goes through here: a reply in its thread, a new mail to the owner (a job's
reply, a reminder, a notice), an ``ask`` question. Composed (email/message.py), then sent off the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from assistant_framework.config.settings.email import EmailSettings
from messaging_llm_bot.channels.contract import OutgoingFile
from messaging_llm_bot.channels.email.message import NEW_THREAD, Thread, compose, message_id_for
from messaging_llm_bot.channels.email.servers import send


class Outbox:
    """Sends mail from ``email.address`` through ``email.smtp``; raises ``MailServerError``."""

    def __init__(self, settings: Callable[[], EmailSettings]) -> None:
        self._settings = settings

    async def send(
        self,
        to: str,
        markdown: str,
        *,
        key: str,
        thread: Thread = NEW_THREAD,
        subject: str = "",
        files: tuple[OutgoingFile, ...] = (),
    ) -> str:
        """Send one mail; ``key`` makes its Message-ID (the same key, the same id: a resend is known as one).
        Returns the Message-ID."""
        settings = self._settings()
        message_id = message_id_for(key, settings.address)
        message = compose(
            sender=settings.address,
            to=to,
            markdown=markdown,
            thread=thread,
            message_id=message_id,
            subject=subject,
            files=files,
        )
        await asyncio.to_thread(send, settings.smtp, message)
        return message_id
