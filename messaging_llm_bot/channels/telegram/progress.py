"""Progress while the model works: typing indicator, one status message, streamed text by edits.

The Agent runs in a worker thread and reports ``AgentEvent``s; ``Progress.on_event`` may be called
from that thread. A single asyncio task applies the newest state to Telegram, at most one edit per
``edit_interval`` seconds, so bursts of deltas never flood the chat (retry_after is honoured by
``edit_text_safely``). Only ``delta`` events are shown as answer text: skill calls never are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import telegram

from messaging_llm_bot.channels.telegram.ratelimit import BudgetSkipped, optional_call
from messaging_llm_bot.channels.telegram.send import edit_text_safely, fit_plain_text

log = logging.getLogger(__name__)

TYPING_EVERY_SECONDS = 4.0
# The first typing action waits this long: a reply ready sooner needs none (one Bot API call and
# its event-loop time saved per quick turn); a slower one shows "typing…" after a pause no one sees.
TYPING_GRACE_SECONDS = 0.3
# Likewise the first status/stream message: a turn done within this needs no live message, so its
# reply is one sendMessage instead of a send plus a final edit (half the rate budget).
FIRST_MESSAGE_GRACE_SECONDS = 0.3
EDIT_INTERVAL_SECONDS = 1.0
STREAM_CURSOR = " ▍"
STOP_WAIT_SECONDS = 5.0
_SKILL_ICONS = {"notes": "📝", "memory": "🧠", "tasks": "✅", "reminders": "⏰", "web": "🌐", "calendar": "📅"}


def status_line(skill: str, args: Any, round_no: int) -> str:
    """A one-line description of a running skill call, e.g. ``🔎 notes: search…``."""
    action = ""
    if isinstance(args, dict):
        for key in ("action", "op", "command", "mode"):
            if isinstance(args.get(key), str) and args[key].strip():
                action = args[key].strip()[:40]
                break
    icon = _SKILL_ICONS.get(skill, "🔎")
    step = f" (step {round_no})" if isinstance(round_no, int) and round_no > 1 else ""
    return f"{icon} {skill}: {action}…{step}" if action else f"{icon} {skill}…{step}"


class Progress:
    """Typing refresher + status/stream message for one turn in one chat."""

    def __init__(
        self,
        bot: telegram.Bot,
        chat_id: int,
        *,
        show_status: bool = True,
        stream: bool = True,
        reply_to_message_id: int | None = None,
        edit_interval: float = EDIT_INTERVAL_SECONDS,
        message_id: int | None = None,
        on_message: Callable[[int], Awaitable[None]] | None = None,
        topic: int | None = None,
    ) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.topic = topic  # the forum topic the message came from: status and typing show there
        self.show_status = show_status
        self.stream = stream
        self.reply_to = reply_to_message_id
        self.edit_interval = edit_interval
        #: The live status/stream message; given when resuming one a crashed run left (it is edited, not resent).
        self.message_id: int | None = message_id
        self.on_message = on_message  # awaited with the id of a newly sent live message (the ledger records it)
        self.showing_stream = False  # True once the live message holds answer text
        self._status = ""
        self._stream_text = ""
        self._shown = ""
        self._last_edit = 0.0
        self._started = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()  # set by stop(): interrupts the edit-interval wait at once
        self._stopping = False
        self._tasks: list[asyncio.Task[Any]] = []

    async def start(self) -> None:
        """Start the typing refresher and the edit worker."""
        self._loop = asyncio.get_running_loop()
        self._started = time.monotonic()
        self._tasks = [asyncio.create_task(self._typing()), asyncio.create_task(self._worker())]

    def on_event(self, event: Any) -> None:
        """Thread-safe sink for AgentEvents."""
        if self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._apply, event.kind, dict(event.data or {}))

    def _apply(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "skill_call" and self.show_status:
            self._status = status_line(str(data.get("skill", "?")), data.get("args"), data.get("round", 1))
            self._stream_text = ""  # a new round: text shown so far was not the answer
        elif kind == "delta" and self.stream and isinstance(data.get("text"), str):
            self._stream_text = data["text"]
        else:
            return
        self._wake.set()

    def _wanted(self) -> str:
        if self._stream_text.strip():
            return fit_plain_text(self._stream_text + STREAM_CURSOR)
        return self._status

    async def _worker(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            if self._stopping:
                break
            if self.message_id is None:
                wait = self._started + FIRST_MESSAGE_GRACE_SECONDS - time.monotonic()
            else:
                wait = self._last_edit + self.edit_interval - time.monotonic()
            if wait > 0:
                # Wait out the edit interval, but wake at once on stop(): the final edit must not
                # sit behind this sleep (up to a second at the end of every streamed reply).
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=wait)
                if self._stopping:
                    break
            await self._show(self._wanted())

    async def _show(self, text: str) -> None:
        if not text.strip() or text == self._shown:
            return
        streaming = bool(self._stream_text.strip())
        if self.message_id is None:
            try:
                # Optional: under load the reply itself is sent instead, as one message.
                msg = await self.bot.send_message(
                    self.chat_id, text, message_thread_id=self.topic, **optional_call(self.bot)
                )
            except BudgetSkipped:
                self._last_edit = time.monotonic()
                return
            except telegram.error.TelegramError as err:
                log.info("telegram: status message in chat %s failed: %s", self.chat_id, err)
                return
            self.message_id = msg.message_id
            ok = True
            if self.on_message is not None:
                await self.on_message(msg.message_id)
        else:
            ok = await edit_text_safely(self.bot, self.chat_id, self.message_id, text, optional=True)
        self._last_edit = time.monotonic()
        if ok:
            self._shown = text
            self.showing_stream = streaming

    async def _typing(self) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=TYPING_GRACE_SECONDS)
        while not self._stopping:
            try:
                await self.bot.send_chat_action(
                    self.chat_id, telegram.constants.ChatAction.TYPING, message_thread_id=self.topic
                )
            except BudgetSkipped:
                pass  # replies need the budget now; the next refresh tries again
            except telegram.error.TelegramError as err:
                log.debug("telegram: typing action in chat %s failed: %s", self.chat_id, err)
            await asyncio.sleep(TYPING_EVERY_SECONDS)

    async def stop(self) -> None:
        """Stop typing and editing; the live message stays for the caller to finalise or discard."""
        self._stopping = True
        self._stop.set()
        self._wake.set()
        typing, worker = self._tasks or (None, None)
        self._tasks = []
        if typing is not None:
            typing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await typing
        if worker is not None:
            # Let an in-flight send finish so its message id is known (no orphan status message).
            try:
                await asyncio.wait_for(worker, timeout=STOP_WAIT_SECONDS)
            except (asyncio.TimeoutError, asyncio.CancelledError, Exception):  # noqa: BLE001 - best effort
                pass

    async def discard(self) -> None:
        """Delete the live message (a status line that should not stay above the answer)."""
        if self.message_id is None:
            return
        try:
            await self.bot.delete_message(self.chat_id, self.message_id)
        except telegram.error.TelegramError as err:
            log.info("telegram: could not delete status message %s in chat %s: %s", self.message_id, self.chat_id, err)
        self.message_id = None
        self.showing_stream = False
