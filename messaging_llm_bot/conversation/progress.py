"""Progress while the model works, on any channel that can edit a sent message: typing, one status line
while skills run, and the answer growing in one message as it streams (Capabilities.can_edit).

The agent runs in a worker thread and reports ``AgentEvent``s; ``Progress.on_event`` may be called from
that thread. One asyncio task applies the newest state to the chat, at most one edit per ``edit_interval``
seconds, so bursts of deltas never flood it. Only ``delta`` events are shown as answer text: skill calls
never are. The channel gives the four platform calls (``LiveMessage``); each is best effort and never raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from assistant_framework.json_types import JsonObject
from messaging_llm_bot.conversation.typing_indicator import Typing
from messaging_llm_bot.conversation.waits import within

log = logging.getLogger(__name__)

TYPING_EVERY_SECONDS = 4.0
# The first typing action waits this long: a reply ready sooner needs none (one platform call and its
# event-loop time saved per quick turn); a slower one shows "typing…" after a pause no one sees.
TYPING_GRACE_SECONDS = 0.3
# Likewise the first status/stream message: a turn done within this needs no live message, so its reply is
# one send instead of a send plus a final edit (half the rate budget).
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


class LiveMessage(Protocol):
    """A channel's calls for one chat's live message; best effort: none raises."""

    def fit(self, text: str) -> str:
        """``text`` cut to one message of the platform (plain text)."""
        ...

    async def send(self, text: str) -> int | None:
        """Send a new message; its id, or None when it was not sent (skipped under load, refused)."""
        ...

    async def edit(self, message_id: int, text: str) -> bool:
        """Replace a sent message's text; True when it shows ``text``."""
        ...

    async def typing(self) -> None:
        """Show "typing…" once."""
        ...

    async def delete(self, message_id: int) -> bool:
        """Delete a sent message; False where the platform cannot (a status line then becomes the reply's first
        part by an edit: conversation/chat_turns.py)."""
        ...


class BestEffortLive:
    """A channel's live message whose calls raise the platform's ``errors``, made a ``LiveMessage``: a failure is
    logged under ``where`` ("telegram: the live message in chat 7") and given up (no message, no edit, no typing,
    a delete counted as done: the reply is sent whole after it); a ``quiet`` one (skipped under load) unlogged."""

    def __init__(
        self,
        live: LiveMessage,
        where: str,
        errors: tuple[type[Exception], ...],
        quiet: tuple[type[Exception], ...] = (),
    ) -> None:
        self.live, self.where, self.errors, self.quiet = live, where, errors, quiet

    def fit(self, text: str) -> str:
        return self.live.fit(text)

    async def send(self, text: str) -> int | None:
        try:
            return await self.live.send(text)
        except self.errors as err:
            self._failed(logging.INFO, "was not sent", err)
            return None

    async def edit(self, message_id: int, text: str) -> bool:
        try:
            return await self.live.edit(message_id, text)
        except self.errors as err:
            self._failed(logging.INFO, "was not edited", err)
            return False

    async def typing(self) -> None:
        try:
            await self.live.typing()
        except self.errors as err:
            self._failed(logging.DEBUG, "showed no typing", err)

    async def delete(self, message_id: int) -> bool:
        try:
            return await self.live.delete(message_id)
        except self.errors as err:
            self._failed(logging.INFO, "was not deleted", err)
            return True

    def _failed(self, level: int, what: str, err: Exception) -> None:
        if not isinstance(err, self.quiet):
            log.log(level, "%s %s: %s", self.where, what, err)


class Progress:
    """Typing refresher + status/stream message for one turn in one chat."""

    def __init__(
        self,
        live: LiveMessage,
        *,
        show_status: bool = True,
        stream: bool = True,
        edit_interval: float = EDIT_INTERVAL_SECONDS,
        message_id: int | None = None,
        on_message: Callable[[int], Awaitable[None]] | None = None,
        typing: Typing | None = None,
    ) -> None:
        self.live = live
        #: "typing…" by a repeated request of the platform's (Matrix), instead of ``live.typing`` every few seconds.
        self.typing = typing
        self.show_status = show_status
        self.stream = stream
        self.edit_interval = edit_interval
        #: The live status/stream message; given when resuming one a crashed run left (it is edited, not resent).
        self.message_id: int | None = message_id
        self.on_message = on_message  # awaited with the id of a newly sent live message (the ledger records it)
        self.showing_stream = False  # True once the live message holds answer text
        self._status = ""
        self._stream_text = ""  # a delta's text, set by the turn's thread (``on_event``)
        self._deltas = 0  # deltas set so far (the turn's thread counts), and those the worker has read
        self._deltas_read = 0
        self._idle = False  # the worker waits for ``_wake`` (it wakes for a delta only then)
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
        if self.typing is not None:
            self.typing.start()
        else:
            self._tasks.append(asyncio.create_task(self._typing()))
        self._tasks.append(asyncio.create_task(self._worker()))

    def on_event(self, event: Any) -> None:
        """Thread-safe sink for AgentEvents: a skill call goes to the loop (``_apply``); the answer's text while
        streaming is set here, from the turn's thread, and wakes the loop only when the worker waits for it
        (``_idle``): in the first message's grace and an edit's interval the worker reads the newest text when
        its wait ends, and a wake-up there (a self-pipe write, a pass of the loop, the GIL taken from the turn's
        thread) cost the turn 0.2-0.4 ms a delta for nothing. The rest ("thinking", a skill's result, "done")
        is shown by nothing."""
        if self._loop is None:
            return
        data = event.data or {}
        if event.kind == "skill_call":
            self._stream_text = ""  # a new round: text shown so far was not the answer (in the thread's order)
            self._loop.call_soon_threadsafe(self._apply, dict(data))
        elif event.kind == "delta" and self.stream and isinstance(data.get("text"), str):
            self._stream_text = data["text"]
            self._deltas += 1  # before ``_idle`` is read: a worker going idle meanwhile sees it (``_worker``)
            if self._idle:
                self._loop.call_soon_threadsafe(self._wake.set)

    def _apply(self, data: JsonObject) -> None:
        """A skill call: its status line (where shown)."""
        if not self.show_status:
            return
        self._status = status_line(str(data.get("skill", "?")), data.get("args"), data.get("round", 1))
        self._wake.set()

    def _wanted(self) -> str:
        if self._stream_text.strip():
            return self.live.fit(self._stream_text + STREAM_CURSOR)
        return self._status

    async def _worker(self) -> None:
        while not self._stopping:
            self._idle = True
            if self._deltas == self._deltas_read:  # else a delta came as this went idle: it did not wake it
                await self._wake.wait()
            self._idle = False
            self._wake.clear()
            if self._stopping:
                break
            if self.message_id is None:
                wait = self._started + FIRST_MESSAGE_GRACE_SECONDS - time.monotonic()
            else:
                wait = self._last_edit + self.edit_interval - time.monotonic()
            if wait > 0:
                # Wait out the edit interval, but wake at once on stop(): the final edit must not
                # sit behind this sleep (up to a second at the end of every streamed reply). A cancel wait_for
                # loses with stop()'s wake-up (conversation/waits.py) ends the loop anyway: _stopping is set.
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=wait)
                if self._stopping:
                    break
            self._deltas_read = self._deltas  # before the text is read: a later delta is news
            await self._show(self._wanted())

    async def _show(self, text: str) -> None:
        if not text.strip() or text == self._shown:
            return
        streaming = bool(self._stream_text.strip())
        if self.message_id is None:
            sent = await self.live.send(text)
            self._last_edit = time.monotonic()
            if sent is None:
                return
            self.message_id = sent
            ok = True
            if self.on_message is not None:
                await self.on_message(sent)
        else:
            ok = await self.live.edit(self.message_id, text)
            self._last_edit = time.monotonic()
        if ok:
            self._shown = text
            self.showing_stream = streaming

    async def _typing(self) -> None:
        # stop() sets _stopping before its wake-up and cancel: a cancel wait_for loses here ends the loop anyway.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=TYPING_GRACE_SECONDS)
        while not self._stopping:
            await self.live.typing()
            await asyncio.sleep(TYPING_EVERY_SECONDS)

    async def stop(self) -> None:
        """Stop typing and editing; the live message stays for the caller to finalise or discard."""
        self._stopping = True
        self._stop.set()
        self._wake.set()
        tasks, self._tasks = self._tasks, []
        worker = tasks.pop() if tasks else None  # started last
        # A cancel of the turn while this waits (the bot's stop gave up on it) goes on, the worker cancelled with
        # it: gather and ``within`` raise it, where a cancel taken for the task's own would be dropped.
        try:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.typing is not None:
                await self.typing.stop()
            if worker is not None:
                # Let an in-flight send finish so its message id is known (no orphan status message).
                with contextlib.suppress(TimeoutError, Exception):  # best effort
                    await within(worker, STOP_WAIT_SECONDS)
        finally:
            if worker is not None:
                worker.cancel()  # ended already, or the turn was cancelled before it did

    async def discard(self) -> bool:
        """Delete the live message (a status line that should not stay above the answer); False when the
        platform cannot (it stays)."""
        if self.message_id is None:
            return True
        if not await self.live.delete(self.message_id):
            return False
        self.message_id = None
        self.showing_stream = False
        return True
