"""Scheduled jobs and reminders in the terminal chat (docs/jobs.md): while the chat is open at a terminal, due
runs of its jobs and its due reminders are printed there, between prompts (both planned by the process's one
scheduler, conversation/job_router.py; a reminder not printed before the chat ends stays due).

The same once-only path as Telegram and Signal: the process's one ``JobScheduler`` (conversation/job_scheduler.py,
joined through conversation/job_router.py) accepts each due run into the durable inbox as
``job:<id>:<planned UTC>`` (an id is taken once), ``answer_job_run`` (conversation/job_answer.py) makes the
reply once and records it before it is printed, the printed reply is recorded as the item's part, then the
run's line is written and the item completed. A run cut off by a crash or by leaving the chat is answered at
the next start; a reply printed before is not printed again.
One terminal chat per workspace (chat.py holds ``state/console.lock``), so no other chat makes these runs.

A reply is printed at once when the user sits at an empty prompt, else kept until the line typed is sent
and answered, then printed before the next prompt (extras.Screen): never into a line being typed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.console.extras import Screen
from messaging_llm_bot.conversation.chatqueue import ChatQueues, max_pending
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.job_answer import answer_job_run
from messaging_llm_bot.conversation.job_router import ChannelJobs, job_router
from messaging_llm_bot.conversation.job_scheduler import JobScheduler
from messaging_llm_bot.conversation.markup import terminal_text
from messaging_llm_bot.conversation.pool import TurnPool
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import request_stop, run_own_loop

log = logging.getLogger(__name__)

REMINDER_POLL_SECONDS = 5.0  # a reminder set in the chat is planned within this (then it is timed exactly)
FINISH_SECONDS = 2.0  # at the chat's end, for a run being finished (a turn still running is not waited for)


class ConsoleJobs:
    """The terminal chat's job runs on an event loop of their own (a thread), one run at a time."""

    def __init__(
        self,
        runtime: Runtime,
        inbox: Inbox,
        screen: Screen,
        conversation_id: str,
        *,
        clock: Callable[[], datetime] | None = None,
        reminder_poll_seconds: float = REMINDER_POLL_SECONDS,
    ) -> None:
        self.runtime = runtime
        self.reminder_poll_seconds = reminder_poll_seconds
        self.inbox = inbox
        self.screen = screen
        self.conversation_id = conversation_id
        self.clock = clock
        self.pool = TurnPool(lambda: runtime.settings)
        self.scheduler: JobScheduler | None = None
        # One run at a time, in the order offered, each once while it waits or runs.
        self.tasks = ChatTasks(ChatQueues("console", lambda: 1, lambda: max_pending(runtime.settings)), "console")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start running jobs: the first look now (it offers the runs a crash or a quit left, too)."""
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="console-jobs", daemon=True)
        self._thread.start()
        ready.wait(10)

    def job_conversation(self, job: Job) -> str | None:
        """The terminal chat's conversation, for the jobs the router finds are the terminal's (made there, or
        made by hand when no chat channel is configured)."""
        return self.conversation_id

    def _run(self, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        try:  # the chat goes on without jobs after an error; the log says why
            run_own_loop(self._loop, self._main(ready), "console", "the terminal chat's jobs")
        finally:
            ready.set()

    async def _main(self, ready: threading.Event) -> None:
        self._stop = asyncio.Event()
        jobs = ChannelJobs(
            asyncio.get_running_loop(),
            self.inbox,
            owner_conversation=self.job_conversation,
            start=self.start_item,
            send_reminder=self.show_reminder,
            reminder_poll_seconds=self.reminder_poll_seconds,
        )
        # Its first look (or the next, when another channel started it) offers the runs a crash or a quit left.
        self.scheduler = await asyncio.to_thread(job_router(self.runtime).attach, "console", jobs, self.clock)
        ready.set()
        try:
            await self._stop.wait()
        finally:
            await asyncio.to_thread(job_router(self.runtime).detach, "console")
            # A run printed a moment ago writes its line and completes; a reply not printed yet (the screen is
            # closed) stays in the inbox at once; a turn still running is cut off: its run is made at the next start.
            await self.tasks.finish(FINISH_SECONDS)
            self.pool.shutdown()

    async def show_reminder(self, chat_id: object, text: str, conversation: object = None) -> bool:
        """A due reminder of the terminal chat (the process's one scheduler routes it here), printed between
        the user's lines; False (still due) when the chat ended before it could be printed."""
        return await asyncio.to_thread(self.screen.show, terminal_text(text))

    def start_item(self, item: InboxItem) -> None:
        """Answer a run's item (on the jobs' loop); once at a time, in the order offered."""
        self.tasks.spawn_once(item.item_id, self.conversation_id, lambda: self._answer(item))

    async def _answer(self, item: InboxItem) -> None:
        async def deliver(text: str) -> bool:
            return await asyncio.to_thread(self._print_reply, item, text)

        async def tell(text: str) -> None:
            await asyncio.to_thread(self.screen.show, terminal_text(text))

        if self.screen.closed:
            return  # the chat ended while this run waited: it is made at the next start
        await answer_job_run(
            self.runtime,
            self.pool,
            self.inbox,
            item,
            chat_id=self.conversation_id,
            user_id="owner",
            deliver=deliver,
            tell=tell,
        )

    def _print_reply(self, item: InboxItem, text: str) -> bool:
        """Print a run's reply once: a reply the item's ledger shows as printed (before a crash) is not
        printed again. False when the chat ended before it could be printed."""
        if self.inbox.parts_sent(item.item_id) > 0:
            return True
        if not self.screen.show(terminal_text(text)):  # a reply's Markdown as the terminal shows it
            return False
        try:
            self.inbox.record_part(item.item_id, 0, time.time_ns() // 1_000_000)  # when it was shown
        except OSError as err:  # printed; a crash before completion would only print it again
            log.warning("jobs: could not record that %s was printed: %s", item.item_id, err)
        return True

    def stop(self) -> None:
        """Stop running jobs (the chat ends); a run not printed yet stays in the inbox for the next start."""
        self.screen.close()
        stop = self._stop
        if stop is not None:
            request_stop(self._loop, stop.set)
        if self._thread is not None:
            self._thread.join(10)
