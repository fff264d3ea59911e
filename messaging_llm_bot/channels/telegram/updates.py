"""How updates reach the handlers: ``getUpdates`` confirms only what the durable inbox holds, and the
updates run concurrently across chats, in arrival order within one."""

from __future__ import annotations

import asyncio
from typing import Any

from telegram import Update
from telegram.ext import BaseUpdateProcessor, ExtBot

from messaging_llm_bot.channels.telegram.frontend import Frontend
from messaging_llm_bot.channels.telegram.settings import is_command

#: PTB's own limit on updates in progress; the chat queues are the bound (see ChatOrderedProcessor).
UNBOUNDED_UPDATES = 1 << 20


class InboxBot(ExtBot):
    """ExtBot whose getUpdates persists model-bound updates before they are confirmed (next offset), and
    returns (so confirms) only those the inbox could store (``TelegramIntake.fetched``); the offset it sends is
    the one ``on_poll`` gives (``TelegramIntake.confirmable``: no further than what is on disk)."""

    def __init__(
        self, *args: Any, on_updates: Any = None, on_first_poll: Any = None, on_poll: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        with self._unfrozen():
            self._on_updates = on_updates
            self._on_first_poll = on_first_poll
            self._on_poll = on_poll

    async def get_updates(self, *args: Any, **kwargs: Any) -> tuple[Update, ...]:
        if self._on_first_poll is not None:
            callback = self._on_first_poll
            with self._unfrozen():
                self._on_first_poll = None
            # Runs once this task waits for the network: the first poll goes out before the rest starts.
            asyncio.get_running_loop().call_soon(callback)
        if self._on_poll is not None and isinstance(kwargs.get("offset"), int):
            kwargs["offset"] = await self._on_poll(kwargs["offset"])
        updates = await super().get_updates(*args, **kwargs)
        if updates and self._on_updates is not None:
            # Only what the inbox holds is returned, so confirmed: the rest (the inbox cannot store it)
            # comes again with the next call, whose offset stays below it.
            return tuple(await self._on_updates(updates, self))
        return updates


class ChatOrderedProcessor(BaseUpdateProcessor):
    """Concurrent across chats, strictly in arrival order within one chat, through the frontend's chat
    queues (conversation/chatqueue.py): a bound per chat, the owner's turns first, one slot kept for them. A
    model-bound update or a command runs no handler: the shared intake queues its turn or its answer
    (``TelegramIntake.take``, ``TelegramIntake.command``)."""

    def __init__(self, frontend: Frontend) -> None:
        # The chat queues bound the work, not PTB's semaphore: with 256 places, one chat's backlog held
        # them all (each waiting for its chat) and every other chat's updates waited behind it.
        super().__init__(UNBOUNDED_UPDATES)
        self.frontend = frontend

    async def do_process_update(self, update: object, coroutine: Any) -> None:
        if not isinstance(update, Update):
            await coroutine
            return
        chat, fe = update.effective_chat, self.frontend
        # Button presses skip the queue: a turn may be waiting for one (confirmations); and what the gate
        # refuses at once, taking no place in a chat's queue: a stranger's update.
        if chat is None or update.callback_query is not None or not fe.access.allowed(update.effective_user):
            await coroutine
            return
        if update.message is not None and is_command(update.message):  # a new one (edits: bot.py's ALLOWED_UPDATES)
            coroutine.close()
            await fe.intake.command(update, update.get_bot())  # /stop at once, the rest in the chat's order
            return
        # In arrival order (PTB starts these tasks in that order, and the lock is taken in that order too).
        async with fe.intake.order:
            if fe.intake.model_bound(update, update.get_bot()):
                coroutine.close()
                await fe.intake.take(update, update.get_bot())
                return
            job = fe.queues.admit(chat.id, owner=fe.access.from_owner(update))
        if job is None:
            coroutine.close()
            await fe.intake.over_limit(update)
            return
        await fe.queues.run(job, coroutine)

    async def initialize(self) -> None:
        """Nothing to set up."""

    async def shutdown(self) -> None:
        """Nothing to free."""
