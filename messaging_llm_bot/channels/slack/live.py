"""The Slack side of conversation/progress.py's live message: the answer growing in one message
(``chat.postMessage`` once, then ``chat.update``).

Progress and the inbox's ledger (``record_live``) name a message by an integer; Slack names it by its ``ts``,
a fixed-point decimal with six digits after the point (``1712345678.000100``). ``ts_number`` writes it as one
integer (``1712345678000100``) and ``ts_of_number`` reads it back exactly, so the ledger records the live
message as soon as it is posted and a restart after a crash edits that message instead of posting another.
"""

from __future__ import annotations

import logging
import re

from messaging_llm_bot.channels.contract import Address, DeliveryError
from messaging_llm_bot.channels.slack.api import SlackClient, SlackUnavailable
from messaging_llm_bot.channels.slack.format import MAX_TEXT_CHARS, escape
from messaging_llm_bot.conversation.progress import BestEffortLive

log = logging.getLogger(__name__)

_TS = re.compile(r"(\d{1,12})\.(\d{6})")
_MICRO = 10**6


def ts_number(ts: str) -> int | None:
    """Slack's ``ts`` as one integer, or None for a ts not in Slack's form (it cannot be recorded)."""
    found = _TS.fullmatch(ts)
    return int(found[1]) * _MICRO + int(found[2]) if found else None


def ts_of_number(number: int) -> str:
    """The ``ts`` that ``ts_number`` made ``number`` of."""
    return f"{number // _MICRO}.{number % _MICRO:06d}"


class SlackLive(BestEffortLive):
    """``LiveMessage`` in one conversation, its ids the messages' ts as numbers; best effort (``BestEffortLive``)."""

    def __init__(self, client: SlackClient, to: Address) -> None:
        where = f"slack: the live message in {to.chat_id}"
        super().__init__(SlackCalls(client, to), where, (SlackUnavailable, DeliveryError))


class SlackCalls:
    """The live message's calls, raising the channel's errors."""

    def __init__(self, client: SlackClient, to: Address) -> None:
        self.client, self.to = client, to

    def fit(self, text: str) -> str:
        return text[: MAX_TEXT_CHARS - 100]  # room for the escapes

    async def send(self, text: str) -> int | None:
        ts = await self.client.post(self.to.chat_id, escape(text), self.to.thread_id)
        number = ts_number(ts)
        if number is None:
            log.warning("slack: the live message's ts %r is not in Slack's form; it is not grown", ts)
        return number

    async def edit(self, message_id: int, text: str) -> bool:
        await self.client.update(self.to.chat_id, ts_of_number(message_id), escape(text))
        return True

    async def typing(self) -> None:
        return None

    async def delete(self, message_id: int) -> bool:
        return False  # a status line left above the answer is edited into its first part instead
