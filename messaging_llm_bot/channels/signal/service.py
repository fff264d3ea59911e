"""The Signal bot: starts its parts, reads the signal-cli event stream until stopped, and stops cleanly.

Start-up: a lock file in the workspace (one Signal bot per workspace), replay of inbox items a
crash left unanswered, reminders, scheduled jobs and the morning digest on an asyncio job queue,
collectors in the background, then the event stream. The parts, one concept each: incoming events
read, gated and stored (events), commands (commands), notices and reminders
sent on the bot's own (notices), one turn (turn), the chats' queues (tasks).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from assistant_framework.config.settings import SignalSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.signal.approval import approvals
from messaging_llm_bot.channels.signal.client import Outage, SignalClient
from messaging_llm_bot.channels.signal.commands import Commands
from messaging_llm_bot.channels.signal.events import EventReader
from messaging_llm_bot.channels.signal.identity import Identities
from messaging_llm_bot.channels.signal.notices import send_to
from messaging_llm_bot.channels.signal.send import say
from messaging_llm_bot.channels.signal.settings import (
    PREFIX,
    SignalMessage,
    allowed_ids,
    chat_of_conversation,
    owner_of,
)
from messaging_llm_bot.channels.signal.turn import TurnRunner
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.chatqueue import ChatQueues, max_pending
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.held import StorageOutage
from messaging_llm_bot.conversation.job_router import ChannelJobs, job_router, owner_digest
from messaging_llm_bot.conversation.job_scheduler import JobScheduler
from messaging_llm_bot.conversation.notices import ChannelNotices, digest_now
from messaging_llm_bot.conversation.pairing import Pairing
from messaging_llm_bot.conversation.pool import pool_size
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import ChannelStop, shutdown_runtime, take_lock
from messaging_llm_bot.conversation.strangers import Strangers, ToldOnce

log = logging.getLogger(__name__)

T = TypeVar("T")

LOCK_FILE = "state/signal.lock"
REFUSED_LOG = "state/signal/refused.log"  # the strangers told their id (once: kept across restarts)
REMINDER_POLL_SECONDS = 30.0
BACKOFF_MAX_SECONDS = 30.0
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class SignalService:
    """One running Signal bot: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is thread-safe."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        stop_signals: Sequence[int] | None = None,
        reminder_poll_seconds: float = REMINDER_POLL_SECONDS,
        manage_runtime: bool = True,
        backoff_max: float = BACKOFF_MAX_SECONDS,
    ) -> None:
        self.runtime = runtime
        self.stop_signals = stop_signals
        self.reminder_poll_seconds = reminder_poll_seconds
        self.manage_runtime = manage_runtime  # False when another frontend shuts the runtime down
        self.backoff_max = backoff_max
        self.shutdown_timeout = runtime.settings.runtime.shutdown_timeout_seconds
        self.ready = threading.Event()
        self.stopped = threading.Event()
        self.outage = Outage(self.settings.base_url)
        self.storage = StorageOutage("signal")  # the inbox cannot store: the stream waits, the message is held
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.shutdown = ChannelStop("signal", self.shutdown_timeout, on_begin=self._stop_reading)
        # Per chat: arrival order, at most runtime.max_pending_per_chat, the owner first; as many at once as
        # the turn pool has threads.
        self.queues = ChatQueues("signal", lambda: pool_size(runtime.settings), lambda: max_pending(runtime.settings))
        self.tasks = ChatTasks(self.queues, "signal")
        #: The jobs' clock (a test's controlled clock; None: the real one).
        self.job_clock: Callable[[], datetime] | None = None
        self.jobs: JobScheduler | None = None  # the process's one scheduler, once Signal joined it
        # The parts made when the service starts (``_main``); the event handlers run only after that.
        self._client: SignalClient | None = None
        self._inbox: Inbox | None = None
        self._turns: TurnRunner | None = None
        self._notices: ChannelNotices | None = None
        self.identities: Identities
        self.approvals: ReplyApprovals
        self.strangers: Strangers
        self.commands: Commands

    @property
    def client(self) -> SignalClient:
        return _started(self._client)

    @property
    def inbox(self) -> Inbox:
        return _started(self._inbox)

    @property
    def turns(self) -> TurnRunner:
        return _started(self._turns)

    @property
    def notices(self) -> ChannelNotices:
        return _started(self._notices)

    def start_job(self, item: InboxItem) -> None:
        """Answer a job run's item in the owner's queue (first, never refused), once at a time."""
        chat = chat_of_conversation(item.conversation_id)
        self.tasks.spawn_once(item.item_id, chat, lambda: self.turns.answer(item))

    def job_conversation(self, job: Job) -> str | None:
        """The conversation a Signal job's runs go to (conversation/job_router.py decides which jobs are
        Signal's): the owner's direct chat, never another chat whatever the row says."""
        owner = owner_of(self.settings)
        return None if owner is None else PREFIX + owner

    @property
    def stopping(self) -> bool:
        """True once a stop began: no more events are read."""
        return self.shutdown.stopping

    @property
    def settings(self) -> SignalSettings:
        """The ``signal`` record of the runtime's current records: a ``/reload`` (from this chat or another
        frontend) changes the allowlist, the owner, the group mode and typing at once; the keys that need a
        restart keep their running value there (assistant_framework/config/reloadable.py)."""
        return self.runtime.settings.signal

    # -- running ------------------------------------------------------------------

    def run(self) -> int:
        """Run until stopped; returns the process exit code."""
        if not self.settings.account:
            print(
                "signal: no account: set signal.account to the bot's number (E.164, e.g. +4915112345678)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        lock = take_lock(self.runtime.workspace, LOCK_FILE, "signal: another Signal bot")
        if lock is None:
            return EXIT_FAILED
        loop = asyncio.new_event_loop()
        self._loop = loop
        code = EXIT_OK
        try:
            loop.run_until_complete(self._main())
        except Exception as err:  # noqa: BLE001 - a clear line, not a traceback on the owner's screen
            log.error("signal: the Signal frontend stopped after an error: %s: %s", type(err).__name__, err)
            log.debug("signal: the error's traceback", exc_info=err)
            code = EXIT_FAILED
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
                lock.release()
                if self.manage_runtime:
                    shutdown_runtime(self.runtime, self.shutdown_timeout)
                self.stopped.set()
        return code

    def stop(self, timeout: float | None = None) -> None:
        """Ask a running bot to stop (any thread); with ``timeout``, wait that long for it to end."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self.begin_shutdown)
            except RuntimeError:
                pass  # the loop closed meanwhile
        if timeout is not None and self._loop is not None:
            self.stopped.wait(timeout)

    def begin_shutdown(self, reason: str = "stop requested") -> None:
        """Stop reading events, give running turns ``shutdown_timeout`` seconds (loop thread;
        conversation/shutdown.py); a second call cancels them at once."""
        if self._stop is not None:
            self.shutdown.begin(reason)

    def _stop_reading(self) -> None:
        if self._turns is not None:
            self._turns.stop_event.set()  # a reply waiting for the daemon stops waiting
        _started(self._stop).set()

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less when a stop begins."""
        stop = _started(self._stop)
        try:
            await asyncio.wait_for(stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def say(self, msg: SignalMessage, text: str) -> None:
        """Answer ``msg`` in its chat, best effort."""
        await say(self.client, msg, text)

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self.shutdown.loop = asyncio.get_running_loop()
        self.shutdown.install_signal_handlers(self.stop_signals)
        workspace = self.runtime.workspace
        self._client = client = SignalClient(self.settings.base_url, self.settings.account)
        self._inbox = inbox = await asyncio.to_thread(Inbox, workspace)
        self.identities = await asyncio.to_thread(Identities, workspace)
        self.approvals = approvals(client)
        self._turns = self.shutdown.turns = TurnRunner(
            self.runtime, inbox, client, lambda: self.settings, self.outage, self.identities, self.approvals
        )
        told = ToldOnce(workspace, REFUSED_LOG)
        await told.load()
        self.strangers = Strangers("signal", told, Pairing(self.runtime))
        self.commands = Commands(self.runtime, self.identities, self.approvals, lambda: self.settings, self.say)
        loop = asyncio.get_running_loop()
        self._notices = notices = ChannelNotices(
            "signal",
            lambda chat, text, conversation: send_to(client, chat, text, conversation),
            lambda: owner_of(self.settings),
            lambda: loop,
            lambda: digest_now(workspace, self.runtime.settings.runtime.timezone),
        )
        events = EventReader(self)
        if not self.settings.allowed:
            log.warning(
                "signal.allowed is empty: the bot answers no one. Send it a message to see your "
                'Signal id, then add it with: config set signal.allowed ["+NUMBER"]'
            )
        log.info(
            "signal: serving %s through signal-cli at %s for %s",
            self.settings.account,
            self.settings.base_url,
            list(allowed_ids(self.settings)),
        )
        events.replay()
        channel_jobs = ChannelJobs(
            asyncio.get_running_loop(),
            inbox,
            owner_conversation=self.job_conversation,
            start=self.start_job,
            send_reminder=notices.send_reminder,
            digest=owner_digest(
                self.settings.morning_digest, self.runtime.settings.runtime.timezone, notices.morning_digest
            ),
            reminder_poll_seconds=self.reminder_poll_seconds,
        )
        self.jobs = await asyncio.to_thread(job_router(self.runtime).attach, "signal", channel_jobs, self.job_clock)
        self.runtime.start_background(notify=notices.notify_from_thread)
        consumer = asyncio.get_running_loop().create_task(events.consume())
        self.ready.set()
        try:
            await self._stop.wait()
        finally:
            consumer.cancel()
            await asyncio.gather(consumer, return_exceptions=True)
            if not self.shutdown.stopping:  # a second call would count as a second Ctrl-C: turns cancelled at once
                self.begin_shutdown()
            await self.shutdown.finish()  # the turns running get until the deadline; their pool is freed
            await self.tasks.cancel_waiting()  # turns still waiting for their chat: their items stay pending
            await asyncio.to_thread(job_router(self.runtime).detach, "signal")
            await client.close()


def run_signal(runtime: Runtime, stop_signals: Sequence[int] | None = (signal.SIGINT, signal.SIGTERM)) -> int:
    """Run the Signal frontend for ``runtime`` until interrupted; returns an exit code."""
    return SignalService(runtime, stop_signals=stop_signals).run()


def _started(part: T | None) -> T:
    if part is None:
        raise RuntimeError("the Signal frontend is not started")
    return part
