"""Sending to a Signal chat: Markdown as styled parts in order, a short answer to a message, and the
"typing…" indicator."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.format import render_signal
from messaging_llm_bot.channels.signal.settings import SignalMessage, recipient_params

log = logging.getLogger(__name__)

TYPING_EVERY_SECONDS = 10.0  # Signal clients drop a typing indicator after about 15 s


async def send_parts(
    client: SignalClient,
    chat: str,
    markdown: str,
    *,
    quote: SignalMessage | None = None,
    skip_parts: int = 0,
    on_part_sent: Callable[[int, int], None] | None = None,
) -> list[int]:
    """Send ``markdown`` as Signal parts in order; returns their timestamps. Raises SignalRpcError/Unavailable."""
    sent = []
    for index, part in enumerate(render_signal(markdown)):
        if index < skip_parts:
            continue
        params: dict[str, Any] = {**recipient_params(chat), "message": part.text}
        if part.styles:
            params["textStyle"] = part.styles
        if quote is not None and index == 0:
            params.update(quoteTimestamp=quote.timestamp, quoteAuthor=quote.uuid or quote.number)
        result = await client.rpc("send", params)
        stamp = int((result or {}).get("timestamp") or 0)
        sent.append(stamp)
        if on_part_sent is not None:
            on_part_sent(index, stamp)
    return sent


async def say(client: SignalClient, msg: SignalMessage, text: str) -> None:
    """Answer ``msg`` in its chat with ``text`` (quoting it in a group), best effort: a failure is logged."""
    try:
        await send_parts(client, msg.chat, text, quote=msg if msg.group_id else None)
    except (SignalRpcError, SignalUnavailable) as err:
        log.info("signal: message to %s failed: %s", msg.chat, err)


class Typing:
    """Shows "typing…" in a chat while the model works (best effort, never raises)."""

    def __init__(self, client: SignalClient, chat: str, enabled: bool = True, shown: bool = False) -> None:
        self.client, self.chat, self.enabled = client, chat, enabled
        self.shown = shown  # the first indicator already went out (batched with the read receipt)
        self._task: asyncio.Task[Any] | None = None

    async def _loop(self) -> None:
        while True:
            if not self.shown:
                await self._send(False)
            self.shown = False
            await asyncio.sleep(TYPING_EVERY_SECONDS)

    async def _send(self, stop: bool) -> None:
        try:
            await self.client.rpc("sendTyping", {**recipient_params(self.chat), **({"stop": True} if stop else {})})
        except (SignalRpcError, SignalUnavailable) as err:
            log.debug("signal: typing indicator in %s failed: %s", self.chat, err)

    def start(self) -> None:
        if self.enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        showing = self._task is not None or self.shown
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._task, self.shown = None, False
        if showing:
            await self._send(True)
