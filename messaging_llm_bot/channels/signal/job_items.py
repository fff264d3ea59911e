"""Scheduled jobs on Signal (conversation/job_runs.py plans them, conversation/job_router.py routes them): the
conversation of Signal's runs, and each run's inbox item answered in the owner's chat queue, once at a time."""

from __future__ import annotations

from collections.abc import Callable

from assistant_framework.config.settings import SignalSettings
from assistant_framework.inbox import InboxItem
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.signal.settings import PREFIX, chat_of_conversation, owner_of
from messaging_llm_bot.channels.signal.turn import TurnRunner
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.runtime import Runtime


class JobItems:
    """``claim`` and ``start`` for the JobScheduler; ``running`` holds the runs waiting or running."""

    def __init__(
        self, runtime: Runtime, settings: Callable[[], SignalSettings], turns: TurnRunner, tasks: ChatTasks
    ) -> None:
        self.runtime = runtime
        self._settings = settings
        self.turns = turns
        self.tasks = tasks
        self.running: set[str] = set()  # job runs waiting in the owner's queue or running

    def start(self, item: InboxItem) -> None:
        """Answer a job run's item in the owner's queue (first, never refused); once at a time."""
        if item.item_id in self.running:
            return
        self.running.add(item.item_id)

        async def run() -> None:
            try:
                await self.turns.answer(item)
            finally:
                self.running.discard(item.item_id)

        self.tasks.spawn(chat_of_conversation(item.conversation_id), run(), owner=True, exempt=True)

    def conversation(self, job: Job) -> str | None:
        """The conversation a Signal job's runs go to (conversation/job_router.py decides which jobs are
        Signal's): the owner's direct chat, never another chat whatever the row says."""
        owner = owner_of(self._settings())
        return None if owner is None else PREFIX + owner
