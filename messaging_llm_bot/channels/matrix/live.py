"""A streamed reply shown as it grows: one message, sent once the answer's first words are there and edited
(``m.replace``) at most once per ``interval`` seconds; typing shown meanwhile. The Agent runs in a worker
thread and reports ``AgentEvent``s; ``on_event`` hands them to the channel's loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from assistant_framework.json_types import JsonObject
from messaging_llm_bot.channels.contract import Address, DeliveryError
from messaging_llm_bot.channels.matrix.channel import MatrixChannel, in_thread, txn_id
from messaging_llm_bot.channels.matrix.client import MatrixUnavailable
from messaging_llm_bot.channels.matrix.format import MatrixPart, render_matrix, text_content
from messaging_llm_bot.conversation.typing_indicator import Typing

log = logging.getLogger(__name__)

EDIT_INTERVAL_SECONDS = 1.0
FIRST_MESSAGE_GRACE_SECONDS = 0.3  # a reply ready sooner is sent whole, without a live message
TYPING_EVERY_SECONDS = 20.0  # the homeserver shows it for 30 s
STREAM_CURSOR = " ▍"
LIVE_PART = "live"  # the transaction id's part name of a reply's live message


def typing(channel: MatrixChannel, room_id: str, enabled: bool) -> Typing:
    """ "typing…" in a room while the model works (conversation/typing_indicator.py; best effort, never raises)."""

    async def send(on: bool) -> None:
        try:
            await channel.client.typing(room_id, on)
        except (MatrixUnavailable, DeliveryError) as err:
            log.debug("matrix: typing in %s failed: %s", room_id, err)

    return Typing(send, TYPING_EVERY_SECONDS, enabled=enabled)


class LiveReply:
    """The growing answer of one turn in one room."""

    def __init__(
        self,
        channel: MatrixChannel,
        to: Address,
        key: str,
        *,
        interval: float = EDIT_INTERVAL_SECONDS,
        on_message: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.channel, self.to, self.key = channel, to, key
        self.interval = interval
        self.on_message = on_message  # awaited with the live message's event id once it is sent (the ledger)
        self.event_id: str | None = None
        self._text = ""
        self._shown = ""
        self._started = 0.0
        self._last = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._started = time.monotonic()
        self._task = self._loop.create_task(self._worker())

    def on_event(self, event: Any) -> None:
        """Thread-safe sink for the agent's events: only answer text (``delta``) is shown."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._apply, str(event.kind), dict(event.data or {}))

    def _apply(self, kind: str, data: JsonObject) -> None:
        if kind == "skill_call":
            self._text = ""  # a new round: what was shown so far was not the answer
        elif kind == "delta" and isinstance(data.get("text"), str):
            self._text = data["text"]
            self._wake.set()

    async def _worker(self) -> None:
        while not self._stop.is_set():
            await self._wake.wait()
            self._wake.clear()
            due = (self._started + FIRST_MESSAGE_GRACE_SECONDS) if self.event_id is None else self._last + self.interval
            wait = due - time.monotonic()
            if wait > 0:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=wait)
                if self._stop.is_set():
                    break
            await self._show()

    async def _show(self) -> None:
        text = self._text.strip()
        if not text or text == self._shown:
            return
        part = MatrixPart(render_matrix(text)[0].body + STREAM_CURSOR)
        try:
            if self.event_id is None:
                content = in_thread(text_content(part), self.to)
                self.event_id = await self.channel.client.send(self.to.chat_id, content, txn_id(self.key, LIVE_PART))
                if self.on_message is not None:
                    await self.on_message(self.event_id)
            else:
                await self.channel.edit_text(self.to, self.event_id, part.body)
        except (MatrixUnavailable, DeliveryError) as err:
            log.info("matrix: the live reply in %s was not updated: %s", self.to.chat_id, err)
        self._last = time.monotonic()
        self._shown = text

    async def stop(self) -> None:
        """Stop editing; an update on its way is let finish, so the live message's id is known."""
        self._stop.set()
        self._wake.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, timeout=10)
            self._task = None
