"""A channel's chats' work as asyncio tasks: each queued in its chat (chatqueue.py: arrival order, a bound per
chat, the owner first) and kept until done, so a stop can cancel those still waiting (their inbox items stay
pending and are answered at the next start). One for every channel on an asyncio loop (Signal, email, Matrix)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Hashable
from typing import Any

from messaging_llm_bot.conversation.chatqueue import ChatQueues

log = logging.getLogger(__name__)


class ChatTasks:
    """Runs coroutines in their chat's queue; ``cancel_waiting()`` at a stop leaves their items pending."""

    def __init__(self, queues: ChatQueues, channel: str) -> None:
        self.queues = queues
        self.channel = channel  # for the log: whose message failed
        self._tasks: set[asyncio.Task[Any]] = set()
        self._once: set[str] = set()  # the keys ``spawn_once`` holds waiting or running

    def spawn(
        self, chat: Hashable, coro: Coroutine[Any, Any, Any], *, owner: bool = False, exempt: bool = False
    ) -> bool:
        """Queue ``coro`` in ``chat``; False (and ``coro`` closed) when the chat already holds
        ``runtime.max_pending_per_chat`` jobs (never when ``exempt``: an item already stored in the inbox)."""
        job = self.queues.admit(chat, owner=owner, exempt=exempt)  # now, in arrival order
        if job is None:
            coro.close()
            return False

        async def in_order() -> None:
            try:
                await self.queues.run(job, coro)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - one failed message must not stop the chat
                log.exception("%s: handling a message in %s failed", self.channel, chat)

        task = asyncio.get_running_loop().create_task(in_order())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    def spawn_once(self, key: str, chat: Hashable, work: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Queue ``work()`` in ``chat`` as the owner's (first, never refused), unless ``key`` is waiting or
        running already: a job run's item, which the scheduler offers again at its next look while it waits."""
        if key in self._once:
            return
        self._once.add(key)

        async def once() -> None:
            try:
                await work()
            finally:
                self._once.discard(key)

        self.spawn(chat, once(), owner=True, exempt=True)

    async def finish(self, timeout: float) -> None:
        """Give the tasks ``timeout`` seconds to end, then cancel the rest (their items stay pending)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
        await self.cancel_waiting()

    async def cancel_waiting(self) -> None:
        """Cancel the tasks still waiting for their chat (their items stay pending) and wait for them."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
