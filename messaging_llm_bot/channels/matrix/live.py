"""Matrix's side of a streamed reply (conversation/progress.py runs it): one message, sent once the answer's first
words are there and edited (``m.replace``) as it grows; typing shown meanwhile, by the room's own repeated
request."""

from __future__ import annotations

import logging
from collections.abc import Callable

from messaging_llm_bot.channels.contract import Address, DeliveryError
from messaging_llm_bot.channels.matrix.channel import MatrixChannel, in_thread, txn_id
from messaging_llm_bot.channels.matrix.client import MatrixUnavailable
from messaging_llm_bot.channels.matrix.format import MatrixPart, render_matrix, text_content
from messaging_llm_bot.conversation.typing_indicator import Typing

log = logging.getLogger(__name__)

TYPING_EVERY_SECONDS = 20.0  # the homeserver shows it for 30 s
LIVE_PART = "live"  # the transaction id's part name of a reply's live message
LIVE_NUMBER = 1  # how Progress and the ledger name a reply's live message


def typing(channel: MatrixChannel, room_id: str, enabled: bool) -> Typing:
    """ "typing…" in a room while the model works (conversation/typing_indicator.py; best effort, never raises)."""

    async def send(on: bool) -> None:
        await channel.client.typing(room_id, on)

    errors = (MatrixUnavailable, DeliveryError)
    return Typing(send, TYPING_EVERY_SECONDS, enabled=enabled, errors=errors, where=f"matrix {room_id}")


class MatrixLive:
    """``LiveMessage`` in one room (conversation/progress.py), best effort: no call raises. The message is sent
    with its reply's transaction id (``txn_id(key, LIVE_PART)``); Progress and the ledger name it ``LIVE_NUMBER``
    and its event id is kept here; after a crash the same transaction gives that event back (the homeserver
    de-duplicates it), so it is edited, never left beside another."""

    def __init__(
        self, channel: MatrixChannel, to: Address, key: str, on_sent: Callable[[MatrixLive], None] | None = None
    ) -> None:
        self.channel, self.to, self.key = channel, to, key
        self.on_sent = on_sent  # told once the message is out (the turn keeps it for the reply's first part)
        self.event_id: str | None = None

    def fit(self, text: str) -> str:
        return render_matrix(text)[0].body

    async def _post(self, body: str) -> str:
        content = in_thread(text_content(MatrixPart(body)), self.to)
        return await self.channel.client.send(self.to.chat_id, content, txn_id(self.key, LIVE_PART))

    async def send(self, text: str) -> int | None:
        try:
            self.event_id = await self._post(text)
        except (MatrixUnavailable, DeliveryError) as err:
            log.info("matrix: the live reply in %s was not sent: %s", self.to.chat_id, err)
            return None
        if self.on_sent is not None:
            self.on_sent(self)
        return LIVE_NUMBER

    async def taken_over(self) -> str:
        """The live message's event id (sent again by its transaction id when a crash lost it)."""
        if self.event_id is None:
            self.event_id = await self._post("…")
        return self.event_id

    async def edit(self, message_id: int, text: str) -> bool:
        try:
            return await self.channel.edit_text(self.to, await self.taken_over(), text)
        except (MatrixUnavailable, DeliveryError) as err:
            log.info("matrix: the live reply in %s was not updated: %s", self.to.chat_id, err)
            return False

    async def typing(self) -> None:
        return None  # the room's indicator is a repeated request of its own (``typing``)

    async def delete(self, message_id: int) -> bool:
        return False  # the live message becomes the reply's first part
