"""A chat turn's answer taken as soon as the agent has it, before the turn writes its history and memory log.

The agent hands the answer on from the turn's thread (``AgentMessage.on_answer``, agent/keeping.py), then writes
the exchange while the channel records the reply (with the record of those writes, one ledger write) and sends
it: the user no longer waits for the history's file and the log's fsync. ``ItemTurns.make_reply`` opens a
``Handed`` for its item (a context variable, so the channel's own steps between it and ``ask_agent`` need not
pass it on); the item is completed only once the writes are made, and a replay makes them from the record when a
kill came first (``ItemTurns.finish``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

from assistant_framework.json_types import JsonObject

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from messaging_llm_bot.agent.incoming import AnswerCallback
    from messaging_llm_bot.agent.turn import TurnResult

log = logging.getLogger(__name__)
T = TypeVar("T")

#: How long a turn's writes wait for its reply's first part to be out (a slow platform: they go on anyway).
SEND_FIRST_SECONDS = 0.05


class Handed:
    """One inbox item's turn: the answer the agent handed on, the record of its writes, the turn still making them."""

    def __init__(self, note_kept: Callable[[], None]) -> None:
        self._note_kept = note_kept  # notes in the item's ledger that the writes were made (from the turn's thread)
        self.keeping: JsonObject | None = None  # the record of the writes, once the answer was handed on
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kept: asyncio.Future[bool] | None = None
        self._sending = threading.Event()  # the reply's first part is out: the writes may take the GIL now

    @property
    def kept(self) -> asyncio.Future[bool] | None:
        """Once the answer was handed on: whether its writes were made, as soon as the turn's thread knows (before
        the turn's trace and upkeep end); None: nothing was handed on."""
        return self._kept if self.keeping is not None else None

    def sending(self) -> None:
        """The reply's first part is out (or the reply is finished): the turn's thread goes on to its writes."""
        self._sending.set()

    async def take(self, run: Callable[[AnswerCallback], Awaitable[TurnResult]]) -> TurnResult | str:
        """Run the turn (``run`` with the callback the agent hands its answer to); the answer's text as soon as the
        agent hands it on, else (a turn that failed or was stopped: nothing handed on) the turn's result."""
        self._loop = loop = asyncio.get_running_loop()
        told: asyncio.Future[tuple[str, JsonObject]] = loop.create_future()
        kept: asyncio.Future[bool] = loop.create_future()
        self._kept = kept  # the turn's thread may note its writes before this task takes the answer

        def on_answer(text: str, keeping: JsonObject) -> None:  # in the turn's thread
            loop.call_soon_threadsafe(_settle, told, (text, keeping))
            # Python runs one thread at a time: the writes would take the interpreter from the loop recording and
            # sending the reply. They wait for its first part to be out, a bounded moment.
            self._sending.wait(SEND_FIRST_SECONDS)

        task = asyncio.ensure_future(run(on_answer))
        try:
            await asyncio.wait((told, task), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not told.done():
            return task.result()
        text, self.keeping = told.result()
        task.add_done_callback(_retrieved)  # a stop may leave it unawaited
        task.add_done_callback(lambda _task: _settle(kept, False))  # ended without noting its writes: not made
        return text

    def noted(self) -> None:
        """The turn's writes were made (in the turn's thread, at once): noted in the item's ledger, and told to the
        loop, which completes the item without waiting for the rest of the turn."""
        try:
            self._note_kept()
        except (OSError, KeyError) as err:  # the next start makes the writes again from the record
            log.warning("could not note that a turn's exchange was kept: %s", err)
            return
        if self._loop is not None and self._kept is not None:
            self._loop.call_soon_threadsafe(_settle, self._kept, True)


#: The item whose turn runs in this task (``ItemTurns.make_reply``); None: a turn with no item to record in.
HANDED: ContextVar[Handed | None] = ContextVar("handed", default=None)


@contextlib.contextmanager
def handing(handed: Handed) -> Iterator[Handed]:
    """``handed`` is the current task's while the block runs."""
    token = HANDED.set(handed)
    try:
        yield handed
    finally:
        HANDED.reset(token)


def _settle(future: asyncio.Future[T], value: T) -> None:
    if not future.done():
        future.set_result(value)


def _retrieved(task: asyncio.Future[TurnResult]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("a turn failed after handing on its answer: %s", task.exception())
