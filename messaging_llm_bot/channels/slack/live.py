"""The Slack side of conversation/progress.py's live message: the answer growing in one message
(``chat.postMessage`` once, then ``chat.update``). Progress counts messages by number; Slack names them by
their ts, so each live message gets a number here."""

from __future__ import annotations

import logging

from messaging_llm_bot.channels.contract import Address, DeliveryError
from messaging_llm_bot.channels.slack.api import SlackClient, SlackUnavailable
from messaging_llm_bot.channels.slack.format import MAX_TEXT_CHARS, escape

log = logging.getLogger(__name__)


class SlackLive:
    """``LiveMessage`` in one conversation; best effort: no call raises."""

    def __init__(self, client: SlackClient, to: Address) -> None:
        self.client, self.to = client, to
        self.sent: dict[int, str] = {}  # Progress's number -> the message's ts

    def fit(self, text: str) -> str:
        return text[: MAX_TEXT_CHARS - 100]  # room for the escapes

    async def send(self, text: str) -> int | None:
        try:
            ts = await self.client.post(self.to.chat_id, escape(text), self.to.thread_id)
        except (SlackUnavailable, DeliveryError) as err:
            log.info("slack: the live message in %s was not sent: %s", self.to.chat_id, err)
            return None
        number = len(self.sent) + 1
        self.sent[number] = ts
        return number

    async def edit(self, message_id: int, text: str) -> bool:
        try:
            await self.client.update(self.to.chat_id, self.sent[message_id], escape(text))
            return True
        except (SlackUnavailable, DeliveryError, KeyError) as err:
            log.info("slack: the live message in %s was not updated: %s", self.to.chat_id, err)
            return False

    async def typing(self) -> None:
        return None

    async def delete(self, message_id: int) -> None:
        return None  # a status line left above the answer is edited into its first part instead
