"""The Matrix channel running: log in, answer what a crash left, join the job scheduler, start reminders and
the digest, then sync until stopped; a stop gives running turns ``shutdown_timeout_seconds``.

Start-up refuses, with one sentence and exit code 2, a config that cannot log in (no credential); with exit
code 1 a homeserver that refuses the login or a workspace where another Matrix bot runs (a lock file). A
homeserver that cannot be reached at start is retried with backoff, logged once.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from datetime import time as dtime
from typing import Any
from zoneinfo import ZoneInfo

from assistant_framework.config.settings import Settings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from assistant_framework.stores.reminders import ReminderStore
from messaging_llm_bot.channels.contract import Address, DeliveryError, TextOut
from messaging_llm_bot.channels.matrix.channel import MatrixChannel
from messaging_llm_bot.channels.matrix.client import LoginFailed, MatrixClient, MatrixUnavailable
from messaging_llm_bot.channels.matrix.events import SyncReader
from messaging_llm_bot.channels.matrix.settings import MatrixConfig, address_of, conversation_of
from messaging_llm_bot.channels.matrix.state import StateFile
from messaging_llm_bot.channels.matrix.turn import TurnRunner
from messaging_llm_bot.conversation.chatqueue import ChatQueues, max_pending
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.held import StorageOutage
from messaging_llm_bot.conversation.job_router import ChannelJobs, job_router
from messaging_llm_bot.conversation.job_scheduler import JobScheduler
from messaging_llm_bot.conversation.jobs import AsyncJobQueue, DailyJob
from messaging_llm_bot.conversation.notices import ChannelNotices, digest_now
from messaging_llm_bot.conversation.pool import pool_size
from messaging_llm_bot.conversation.reminders import ReminderScheduler
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import request_stop, run_own_loop, shutdown_runtime, take_lock

log = logging.getLogger(__name__)

LOCK_FILE = "state/matrix.lock"
REMINDER_POLL_SECONDS = 30.0
BACKOFF_MAX_SECONDS = 30.0
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class MatrixService:
    """One running Matrix channel: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is
    thread-safe."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        stop_signals: Sequence[int] | None = None,
        manage_runtime: bool = True,
        reminder_poll_seconds: float = REMINDER_POLL_SECONDS,
        backoff_max: float = BACKOFF_MAX_SECONDS,
    ) -> None:
        self.runtime = runtime
        self.stop_signals = stop_signals
        self.manage_runtime = manage_runtime  # False when another channel shuts the runtime down
        self.reminder_poll_seconds = reminder_poll_seconds
        self.backoff_max = backoff_max
        self.shutdown_timeout = runtime.settings.runtime.shutdown_timeout_seconds
        self.ready = threading.Event()  # logged in, the first sync handled
        self.stopped = threading.Event()
        self.storage = StorageOutage("matrix")
        self.queues = ChatQueues("matrix", lambda: pool_size(runtime.settings), lambda: max_pending(runtime.settings))
        self.tasks = ChatTasks(self.queues, "matrix")
        self.job_clock: Callable[[], datetime] | None = None  # a test's clock for the jobs (None: the real one)
        self.jobs: JobScheduler | None = None
        self._config: tuple[Settings, MatrixConfig] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stopping = False
        self.state: StateFile
        self.inbox: Inbox
        self.channel: MatrixChannel
        self.turns: TurnRunner
        self.reader: SyncReader
        self.notices = ChannelNotices(
            "matrix",
            self._send_to,
            self._owner_conversation,
            lambda: self._loop,
            lambda: digest_now(runtime.workspace, self.config.timezone),
        )

    @property
    def config(self) -> MatrixConfig:
        """The ``matrix`` record of the runtime's current settings: a ``/reload`` changes the allowlist, the
        owner, the group mode and typing at once (the rest needs a restart: config/reloadable.py)."""
        current = self.runtime.settings
        if self._config is None or self._config[0] is not current:
            self._config = (current, MatrixConfig.from_settings(current))
        return self._config[1]

    @property
    def stopping(self) -> bool:
        return self._stopping

    # -- running ------------------------------------------------------------------------

    def run(self) -> int:
        config = self.config
        if config.problem:
            print(f"matrix: cannot log in: {config.problem}", file=sys.stderr)
            return EXIT_USAGE
        lock = take_lock(self.runtime.workspace, LOCK_FILE, "matrix: another Matrix bot")
        if lock is None:
            return EXIT_FAILED
        self._loop = loop = asyncio.new_event_loop()
        try:
            done = run_own_loop(loop, self._main(), "matrix", "the Matrix channel", self._known_error)
        finally:
            lock.release()
            if self.manage_runtime:
                shutdown_runtime(self.runtime, self.shutdown_timeout)
            self.stopped.set()
        return EXIT_OK if done else EXIT_FAILED

    def stop(self, timeout: float | None = None) -> None:
        """Ask a running channel to stop (any thread); with ``timeout``, wait that long for it to end."""
        request_stop(self._loop, self.begin_shutdown, self.stopped, timeout)

    @staticmethod
    def _known_error(err: Exception) -> str | None:
        return f"matrix: {err}" if isinstance(err, LoginFailed) else None

    def begin_shutdown(self, reason: str = "stop requested") -> None:
        if self._stop is None:
            return
        if self._stopping:  # a second Ctrl-C / SIGTERM: do not wait any longer
            self.turns.cancel_all()
            return
        self._stopping = True
        log.info(
            "matrix: %s: stopping; waiting up to %.0f s for %d turn(s) in flight; messages not yet answered "
            "stay in the inbox",
            reason,
            self.shutdown_timeout,
            self.turns.active if hasattr(self, "turns") else 0,
        )
        if hasattr(self, "turns"):
            self.turns.stopping = True
            self.turns.stop_event.set()
        self._stop.set()

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less when a stop begins."""
        assert self._stop is not None
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _login(self) -> bool:
        """Log in, retrying while the homeserver cannot be reached; False when a stop came first."""
        delay = 0.5
        told = False
        while not self._stopping:
            try:
                await self.channel.client.login()
                await asyncio.to_thread(self.state.update, device_id=self.channel.client.device_id)
                return True
            except MatrixUnavailable as err:
                if not told:
                    told = True
                    log.warning("matrix: cannot log in yet: %s; retrying", err)
                await self.sleep(delay)
                delay = min(delay * 2, self.backoff_max)
        return False

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in self.stop_signals or ():
            try:
                loop.add_signal_handler(sig, self.begin_shutdown, signal.Signals(sig).name)
            except (NotImplementedError, RuntimeError, ValueError) as err:
                log.warning("matrix: cannot handle signal %s (%s); stop with stop()", sig, err)
        workspace = self.runtime.workspace
        self.state = await asyncio.to_thread(StateFile, workspace)
        self.inbox = await asyncio.to_thread(Inbox, workspace)
        client = MatrixClient(self.config, self.state.state.device_id)
        self.channel = MatrixChannel(client)
        self.turns = TurnRunner(self.runtime, self.inbox, self.channel, lambda: self.config)
        self.reader = reader = SyncReader(self)
        jobs = AsyncJobQueue()
        try:
            if not await self._login():
                return
            if not self.config.allowed:
                log.warning(
                    "matrix.allowed is empty: the bot answers no one and joins no room. Add your Matrix id: "
                    'config set matrix.allowed ["@you:example.org"]'
                )
            log.info(
                "matrix: serving %s on %s for %s", client.user_id, self.config.homeserver, list(self.config.allowed)
            )
            reader.replay()
            ReminderScheduler(
                ReminderStore(workspace),
                jobs,
                self.notices.send_reminder,
                default_tz=self.config.timezone,
                poll_seconds=self.reminder_poll_seconds,
                channel="matrix",
            ).start()
            channel_jobs = ChannelJobs(
                loop, self.inbox, owner_conversation=self.owner_conversation, start=self.start_job
            )
            self.jobs = await asyncio.to_thread(job_router(self.runtime).attach, "matrix", channel_jobs, self.job_clock)
            if self.config.morning_digest:
                hour, minute = (int(x) for x in self.config.morning_digest.split(":"))
                when = dtime(hour, minute, tzinfo=ZoneInfo(self.config.timezone))
                DailyJob(jobs, self.morning_digest, when, "matrix:morning-digest").start()
            self.runtime.start_background(notify=self.notices.notify_from_thread)
            consumer = loop.create_task(reader.consume())
            ready = loop.create_task(reader.synced.wait())
            await asyncio.wait({ready, loop.create_task(self._stop.wait())}, return_when=asyncio.FIRST_COMPLETED)
            self.ready.set()
            try:
                await self._stop.wait()
            finally:
                consumer.cancel()
                ready.cancel()
                await asyncio.gather(consumer, ready, return_exceptions=True)
        finally:
            self.ready.set()
            await self._wind_down(jobs)

    async def _wind_down(self, jobs: AsyncJobQueue) -> None:
        if not self._stopping:
            self.begin_shutdown()
        turns = self.turns
        if not await turns.wait_idle(self.shutdown_timeout):
            cancelled = turns.cancel_all()
            log.warning(
                "matrix: %d turn(s) did not finish within %.0f s; their messages stay in the inbox and are "
                "answered at the next start",
                cancelled,
                self.shutdown_timeout,
            )
            await turns.wait_idle(1.0)
        await self.tasks.cancel_waiting()
        if self.jobs is not None:
            await asyncio.to_thread(job_router(self.runtime).detach, "matrix")
        await jobs.stop()
        await self.channel.client.close()
        turns.pool.shutdown()

    # -- jobs, reminders, notices -------------------------------------------------------

    def owner_conversation(self, job: Job) -> str | None:
        """Where a Matrix job's runs go: the owner's direct room (known once the owner wrote there)."""
        room = self.state.state.owner_room
        return conversation_of(room) if room else None

    def start_job(self, item: InboxItem) -> None:
        """Answer a job run's item in the owner's queue (first, never refused)."""
        self.tasks.spawn(item.conversation_id, self.turns.answer(item), owner=True, exempt=True)

    async def _send_to(self, conversation_id: str, text: str, _conversation: object) -> None:
        """Text to a conversation (``mx:`` room, thread); ``DeliveryError``, for good when the homeserver
        refused it (the bot left the room), else to try again later."""
        room, thread = address_of(conversation_id)
        try:
            await self.channel.send_text(Address(room, thread), TextOut(text))
        except DeliveryError as err:
            raise DeliveryError(f"the homeserver refused it: {err}", for_good=True) from err
        except MatrixUnavailable as err:
            raise DeliveryError(str(err)) from err

    def _owner_conversation(self) -> str | None:
        """Where notices and the digest go: the owner's direct room, known once the owner wrote there."""
        room = self.state.state.owner_room
        if not room:
            log.warning("matrix: a notice for the owner waits for their first message in a direct room")
        return conversation_of(room) if room else None

    async def morning_digest(self, context: Any) -> None:
        await self.notices.morning_digest()


def run_matrix(runtime: Runtime, stop_signals: Sequence[int] | None = (signal.SIGINT, signal.SIGTERM)) -> int:
    """Run the Matrix channel for ``runtime`` until interrupted; returns an exit code."""
    return MatrixService(runtime, stop_signals=stop_signals).run()
