"""How a chat frontend schedules its work: in order per chat, a bound per chat, the owner first.

Every update of a chat (a message, a command) is a job in that chat's queue. One chat's jobs run one
at a time in arrival order; different chats run side by side, at most ``slots()`` at once (the turn
pool's threads), one of them kept for the owner. When a slot frees, the next job comes from a chat
whose next job is the owner's, then from the chat served longest ago (round robin), so one chat's
backlog never holds the others back: a friend's 600 messages wait in the friend's queue, not in
front of the owner's message.

A chat holds at most ``limit()`` jobs (waiting or running; ``runtime.max_pending_per_chat``). The
frontend does not queue a message beyond that: it is not answered (it leaves the inbox), and the
chat is told once per backlog (``refused`` says when). The owner's own messages, and the replay of
what a crash left, are never refused.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Callable, Coroutine, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from assistant_framework.config.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")


def max_pending(settings: Settings) -> int:
    """``runtime.max_pending_per_chat``, at least 1."""
    return max(1, settings.runtime.max_pending_per_chat)


@dataclass(eq=False)
class ChatJob:
    """A place in a chat's queue: ``run`` it exactly once."""

    chat: Hashable
    owner: bool
    seq: int
    start: asyncio.Future[Any] = field(repr=False)


@dataclass(eq=False)
class _Chat:
    jobs: deque[Any] = field(default_factory=deque)  # admitted, not started yet, in arrival order
    running: bool = False
    served: int = 0  # when this chat last started a job (dispatch counter): round robin
    refused: int = 0  # messages over the limit in the current backlog


class ChatQueues:
    """The queues of one frontend (used on its event loop only)."""

    def __init__(self, name: str, slots: Callable[[], int], limit: Callable[[], int]) -> None:
        self.name = name
        self._slots = slots
        self._limit = limit
        self._chats: dict[Hashable, _Chat] = {}
        self._running = 0
        self._seq = itertools.count(1)
        self._dispatched = itertools.count(1)

    # -- admission ------------------------------------------------------------

    def pending(self, chat: Hashable) -> int:
        """Jobs of ``chat`` waiting or running."""
        state = self._chats.get(chat)
        return 0 if state is None else len(state.jobs) + int(state.running)

    def full(self, chat: Hashable) -> bool:
        """True when ``chat`` holds ``limit()`` jobs already."""
        return self.pending(chat) >= self._limit()

    def admit(self, chat: Hashable, *, owner: bool = False, exempt: bool = False) -> ChatJob | None:
        """A place at the end of ``chat``'s queue, or None when the chat is full. The owner's jobs and
        ``exempt`` ones (a replay) are always admitted. Synchronous: call it in arrival order."""
        if not (owner or exempt) and self.full(chat):
            return None
        job = ChatJob(chat, owner, next(self._seq), asyncio.get_running_loop().create_future())
        self._chats.setdefault(chat, _Chat()).jobs.append(job)
        self._dispatch()
        return job

    def refused(self, chat: Hashable) -> bool:
        """Count a message of ``chat`` left out over the limit; True for the first of its backlog (tell
        the chat then, once, until its queue has run empty)."""
        state = self._chats.get(chat)
        if state is None:  # caught up meanwhile: nothing to tell
            return False
        state.refused += 1
        if state.refused == 1:
            log.warning(
                "%s: chat %s has %d messages waiting (runtime.max_pending_per_chat): further messages of "
                "that chat are not answered until it has caught up",
                self.name,
                chat,
                self.pending(chat),
            )
        return state.refused == 1

    # -- running --------------------------------------------------------------

    async def run(self, job: ChatJob, work: Coroutine[Any, Any, T]) -> T:
        """Wait for ``job``'s turn, then run ``work``; the slot and the chat are freed after it."""
        try:
            await job.start
        except asyncio.CancelledError:
            work.close()
            if job.start.done() and not job.start.cancelled():
                self._finish(job)  # its turn had come: give the slot back
            else:
                self._drop(job)
            raise
        try:
            return await work
        finally:
            self._finish(job)

    def _dispatch(self) -> None:
        """Start waiting jobs while slots are free: the owner's first, then the chat served longest ago.
        Other chats' jobs leave one slot free for the owner (with more than one slot)."""
        while True:
            ready = [(chat, s) for chat, s in self._chats.items() if s.jobs and not s.running]
            if not ready:
                return
            _, state = min(ready, key=lambda cs: (not cs[1].jobs[0].owner, cs[1].served, cs[1].jobs[0].seq))
            slots = max(1, self._slots())
            if self._running >= (slots if state.jobs[0].owner or slots == 1 else slots - 1):
                return
            job = state.jobs.popleft()
            state.running, state.served = True, next(self._dispatched)
            self._running += 1
            job.start.set_result(None)

    def _finish(self, job: ChatJob) -> None:
        state = self._chats[job.chat]
        state.running = False
        self._running -= 1
        self._forget_if_idle(job.chat, state)
        self._dispatch()

    def _drop(self, job: ChatJob) -> None:
        state = self._chats.get(job.chat)
        if state is not None and job in state.jobs:
            state.jobs.remove(job)
            self._forget_if_idle(job.chat, state)

    def _forget_if_idle(self, chat: Hashable, state: _Chat) -> None:
        if state.jobs or state.running:
            return
        if state.refused:
            log.info(
                "%s: chat %s caught up; %d message(s) over the limit were not answered", self.name, chat, state.refused
            )
        del self._chats[chat]
