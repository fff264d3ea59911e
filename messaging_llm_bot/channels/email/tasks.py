"""The email chats' work as asyncio tasks: each queued in its sender's chat (conversation/chatqueue.py:
arrival order, the owner first) and kept until done, so a stop can cancel those still waiting (their items
stay in the inbox). Every mail is admitted: it is stored already, and each look takes a bounded number."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from messaging_llm_bot.conversation.chatqueue import ChatQueues

log = logging.getLogger(__name__)


class ChatTasks:
    def __init__(self, queues: ChatQueues) -> None:
        self.queues = queues
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, chat: str, coro: Coroutine[Any, Any, Any], *, owner: bool) -> None:
        job = self.queues.admit(chat, owner=owner, exempt=True)
        if job is None:  # cannot happen with exempt; closed rather than leaked
            coro.close()
            return

        async def in_order() -> None:
            try:
                await self.queues.run(job, coro)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - one failed mail must not stop the chat
                log.exception("email: handling a mail from %s failed", chat)

        task = asyncio.get_running_loop().create_task(in_order())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def cancel_waiting(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
