"""One channel running on an event loop of its own, the same on every such channel (Signal, Matrix, WhatsApp,
email; docs/channels.md): a config that cannot run refused in one sentence (exit code 2), one running copy per
workspace (a lock file, exit code 1), the loop run to its end with an expected error as one line on stderr and
any other as one line in the log (conversation/shutdown.py), the stop asked from any thread or by a signal,
then no new turns, the running ones given ``runtime.shutdown_timeout_seconds``, the chats' waiting turns
dropped (their items stay in the inbox), the job scheduler left, and the runtime shut down by the first
channel of the process.

A channel gives its name and lock, what it checks before it starts (``problem``), the errors it expects
(``known_error``), its start (``serve``: its parts made, what the last run left answered, the job scheduler
joined; it returns when the channel is ready), how it stops taking messages (``stop_taking``) and what it
closes at the end (``close``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections.abc import Callable, Coroutine, Hashable, Sequence, Sized
from datetime import datetime
from typing import Generic, Protocol, TypedDict, TypeVar

from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from messaging_llm_bot.agent.guard import ApprovalRequest
from messaging_llm_bot.conversation.approvals import Answer
from messaging_llm_bot.conversation.chatqueue import ChatQueues, max_pending
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.held import StorageOutage
from messaging_llm_bot.conversation.intake import Arrival, ChannelIntake
from messaging_llm_bot.conversation.item_turns import ItemTurns
from messaging_llm_bot.conversation.job_router import ChannelJobs, job_router, owner_digest
from messaging_llm_bot.conversation.job_scheduler import JobScheduler
from messaging_llm_bot.conversation.notices import ChannelNotices, SendTo, digest_now, notify_from_thread
from messaging_llm_bot.conversation.outage import BACKOFF_MAX_SECONDS
from messaging_llm_bot.conversation.pool import pool_size
from messaging_llm_bot.conversation.reminders import POLL_SECONDS
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import ChannelStop, request_stop, run_own_loop, shutdown_runtime, take_lock
from messaging_llm_bot.conversation.waits import within

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

RecordT = TypeVar("RecordT")
MadeT = TypeVar("MadeT")


class PerRecord(Generic[RecordT, MadeT]):
    """What a channel makes of its config record (the secrets the record's environment variables name), made
    once per record: a load or ``/reload`` builds new records, so it is made again then, not at every call."""

    def __init__(self, make: Callable[[RecordT], MadeT]) -> None:
        self._make = make
        self._made: tuple[RecordT, MadeT] | None = None

    def __call__(self, record: RecordT) -> MadeT:
        if self._made is None or self._made[0] is not record:
            self._made = (record, self._make(record))
        return self._made[1]


class ChannelHost(Protocol):
    """What a channel's intake reads of the running service that owns it (a ``ChannelService``), declared once; a
    channel's own host protocol adds its parts (its client, its turn runner, its config). A protocol, not the
    service's class: the service imports its intake, never the other way round (tests/test_layout.py)."""

    backoff_max: float  # the longest wait before a server that is down is tried again

    @property
    def runtime(self) -> Runtime: ...

    @property
    def inbox(self) -> Inbox: ...

    @property
    def tasks(self) -> ChatTasks: ...

    @property
    def stopping(self) -> bool: ...

    async def sleep(self, seconds: float) -> None: ...

    def channel_intake(
        self,
        turns: ItemTurns,
        *,
        hold: bool = False,
        lost: Callable[[Arrival], None] | None = ...,
        queue_of: Callable[[str], Hashable] = ...,
        taken: Callable[[InboxItem], None] = ...,
    ) -> ChannelIntake: ...


class ChannelOptions(TypedDict, total=False):
    """``ChannelService``'s keyword arguments, as a channel's own ``__init__`` passes them on (``Unpack``)."""

    stop_signals: Sequence[int] | None
    manage_runtime: bool
    reminder_poll_seconds: float
    backoff_max: float


class ChannelService:
    """One running channel: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is thread-safe."""

    NAME = ""  # the channel's name, as its route and its log lines say it ("matrix")
    TITLE = ""  # what the log calls it after an error ("the Matrix channel")
    LOCK_FILE = ""  # its lock in the workspace ("state/matrix.lock"; none: the web chat, inside the bot's process)
    LOCK_WHO = ""  # who holds that lock, as the refusal says it ("matrix: another Matrix bot")

    def __init__(
        self,
        runtime: Runtime,
        *,
        stop_signals: Sequence[int] | None = None,
        manage_runtime: bool = True,
        reminder_poll_seconds: float = POLL_SECONDS,
        backoff_max: float = BACKOFF_MAX_SECONDS,
    ) -> None:
        self.runtime = runtime
        self.stop_signals = stop_signals
        self.manage_runtime = manage_runtime  # False when another channel shuts the runtime down
        self.reminder_poll_seconds = reminder_poll_seconds  # how often due reminders are looked for (tests: less)
        self.backoff_max = backoff_max  # the longest wait before a server that is down is tried again (outage.py)
        self.shutdown_timeout = runtime.settings.runtime.shutdown_timeout_seconds
        self.shutdown = ChannelStop(self.NAME, self.shutdown_timeout, on_begin=self._stop_waiting)
        self.ready = threading.Event()  # serving (set at the end too, so that nobody waits for a failed start)
        self.stopped = threading.Event()
        self.storage = StorageOutage(self.NAME)  # the inbox cannot store: intake waits, the message is held
        # Per chat: arrival order, at most runtime.max_pending_per_chat, the owner first; as many at once as the
        # turn pool has threads.
        self.queues = ChatQueues(self.NAME, lambda: pool_size(runtime.settings), lambda: max_pending(runtime.settings))
        self.tasks = ChatTasks(self.queues, self.NAME)
        self.job_clock: Callable[[], datetime] | None = None  # a test's clock for the jobs (None: the real one)
        self.jobs: JobScheduler | None = None  # the process's one scheduler, once this channel joined it
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._reading: list[asyncio.Task[object]] = []  # what ``stop_taking`` cancels by default (``reading``)
        self._handling: set[asyncio.Task[None]] = set()  # what ``handle_apart`` started and has not ended

    @property
    def stopping(self) -> bool:
        """True once a stop began: no more messages are taken."""
        return self.shutdown.stopping

    def problem(self) -> str | None:
        """Why the config cannot run this channel (the line on stderr, naming the key), or None."""
        return None

    def known_error(self, err: Exception) -> str | None:
        """The owner's line on stderr for an error the channel expects (a refused login, a port in use), or None."""
        return None

    def run(self) -> int:
        """Run until stopped; returns the process exit code."""
        problem = self.problem()
        if problem:
            print(problem, file=sys.stderr)
            return EXIT_USAGE
        lock = take_lock(self.runtime.workspace, self.LOCK_FILE, self.LOCK_WHO) if self.LOCK_FILE else None
        if lock is None and self.LOCK_FILE:
            return EXIT_FAILED
        self._loop = loop = asyncio.new_event_loop()
        try:
            done = run_own_loop(loop, self._main(), self.NAME, self.TITLE, self.known_error)
        finally:
            if lock is not None:
                lock.release()
            if self.manage_runtime:
                shutdown_runtime(self.runtime, self.shutdown_timeout)
            self.stopped.set()
        return EXIT_OK if done else EXIT_FAILED

    def stop(self, timeout: float | None = None) -> None:
        """Ask a running channel to stop (any thread); with ``timeout``, wait that long for it to end."""
        request_stop(self._loop, self.begin_shutdown, self.stopped, timeout)

    def begin_shutdown(self, reason: str = "stop requested") -> None:
        """Stop taking messages, give running turns ``shutdown_timeout`` seconds (loop thread;
        conversation/shutdown.py); a second call cancels them at once."""
        if self._stop is not None:
            self.shutdown.begin(reason)

    def _stop_waiting(self) -> None:
        if self.shutdown.turns is not None:
            self.shutdown.turns.stop_event.set()  # a reply waiting for the platform stops waiting
        if self._stop is not None:
            self._stop.set()

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less when a stop begins. A cancel is never lost here (``within``): the stop's
        wake-up and the cancel of a ``reading`` task come together, and ``asyncio.wait_for`` (Python 3.11)
        returned then, the cancel swallowed, and the task read on."""
        assert self._stop is not None
        with contextlib.suppress(TimeoutError):
            await within(self._stop.wait(), seconds)

    async def shutdown_requested(self) -> None:
        """Return once a stop began."""
        assert self._stop is not None
        await self._stop.wait()

    def warn_if_no_one_allowed(self, allowed: Sized, key: str, how: str, example: str, also: str = "") -> None:
        """The owner's warning at the start when the allowlist ``key`` is empty: the channel answers no one (and,
        ``also``, what else it does not do); ``how`` they find the id to add, ``example`` the list as
        ``config set`` takes it."""
        if not allowed:
            log.warning("%s is empty: the bot answers no one%s. %s: config set %s %s", key, also, how, key, example)

    async def send_notice(self, text: str) -> bool:
        """A notice for the owner (a collector's, the morning digest) on a channel whose notices go through its
        inbox like a reply (``notice_through_inbox``); True once it is on its way."""
        raise NotImplementedError(f"{self.NAME} sends its notices through conversation/notices.py")

    def notify_from_thread(self, collector_name: str, text: str) -> None:
        """A collector's notice for the owner, from the collector's thread: ``send_notice`` on the channel's loop."""
        notify_from_thread(self._loop, self.send_notice, collector_name, text)

    async def notice_through_inbox(self, turns: ItemTurns, chat: str | None, text: str, missing: str) -> bool:
        """``text`` to the owner's conversation ``chat`` through the inbox and the ledger like a reply
        (``ItemTurns.queue_notice``: it goes out once); while there is no such chat, not sent (``missing``: why,
        logged)."""
        if chat is None:
            log.warning("%s: a notice for the owner is not sent: %s", self.NAME, missing)
            return False
        return await turns.queue_notice(self.tasks, chat, text)

    async def join_jobs(self, jobs: ChannelJobs) -> None:
        """Join the process's one job scheduler (left at the stop). A stop that cancels the wait does not stop the
        join in its thread: it is waited for, so that the stop knows to leave the scheduler again."""
        joining = asyncio.ensure_future(
            asyncio.to_thread(job_router(self.runtime).attach, self.NAME, jobs, self.job_clock)
        )
        try:
            self.jobs = await asyncio.shield(joining)
        except asyncio.CancelledError:
            self.jobs = await joining
            raise

    def channel_intake(
        self,
        turns: ItemTurns,
        *,
        hold: bool = False,
        lost: Callable[[Arrival], None] | None = None,
        queue_of: Callable[[str], Hashable] = lambda conversation_id: conversation_id,
        taken: Callable[[InboxItem], None] = lambda _item: None,
    ) -> ChannelIntake:
        """The end of the channel's intake (conversation/intake.py) over its chats' queues, ``turns`` answering.
        ``hold``: while the inbox cannot store, a message is held and stored again after a pause until a stop
        (an event stream, not read further meanwhile; ``lost`` logs one a stop ended); else it is refused (a
        webhook: the platform sends it again). ``taken``: told of each stored item handed on."""
        return ChannelIntake(
            turns,
            self.queues,
            self.tasks,
            self.storage,
            wait=self.sleep if hold else None,
            stopping=lambda: self.stopping,
            lost=lost,
            queue_of=queue_of,
            taken=taken,
        )

    def owner_notices(self, send: SendTo, owner: Callable[[], str | None]) -> ChannelNotices:
        """What the channel sends unasked (conversation/notices.py: collectors' notices and the morning digest to
        the owner's chat, ``owner``'s id or None, and reminders to theirs), over its one ``send``."""
        runtime = self.runtime

        def digest() -> str:
            return digest_now(runtime.workspace, runtime.settings.runtime.timezone)

        return ChannelNotices(self.NAME, send, owner, lambda: self._loop, digest)

    async def join_jobs_sending(
        self,
        notices: ChannelNotices,
        inbox: Inbox,
        *,
        owner_conversation: Callable[[Job], str | None],
        start: Callable[[InboxItem], None],
        morning_digest: str | None,
        ask_owner: Callable[[ApprovalRequest], Answer] | None,
        reminder_poll_seconds: float | None = None,
    ) -> None:
        """Join the job scheduler (``join_jobs``: job runs into ``inbox``, answered by ``start``) with the due
        reminders (looked for every ``reminder_poll_seconds``, by default the service's) and the owner's morning
        digest (``morning_digest``: "07:30", or none) sent through ``notices``; then the runtime's background work
        starts, its collectors' notices sent through them too."""
        timezone = self.runtime.settings.runtime.timezone
        jobs = ChannelJobs(
            asyncio.get_running_loop(),
            inbox,
            owner_conversation=owner_conversation,
            start=start,
            send_reminder=notices.send_reminder,
            digest=owner_digest(morning_digest, timezone, notices.morning_digest),
            reminder_poll_seconds=reminder_poll_seconds or self.reminder_poll_seconds,
            ask_owner=ask_owner,
        )
        await self.join_jobs(jobs)
        self.runtime.start_background(notify=notices.notify_from_thread)

    async def serve(self) -> None:
        """Start the channel's parts (``self.shutdown.turns`` among them) and return once it serves."""
        raise NotImplementedError

    def reading(self, work: Coroutine[object, object, object]) -> asyncio.Task[object]:
        """``work`` (an event stream read, a sync loop, what waits for it) as a task ``stop_taking`` cancels."""
        task = asyncio.get_running_loop().create_task(work)
        self._reading.append(task)
        return task

    def handle_apart(self, work: Coroutine[object, object, object], what: str) -> None:
        """``work`` (one of the platform's updates, ``what``) in a task of its own, started in the order of the
        calls; its error is logged and ends nothing else. ``handled`` waits for them."""

        async def logged() -> None:
            try:
                await work
            except Exception:  # noqa: BLE001 - one update that fails must not stop the others
                log.exception("%s: error while handling %s", self.NAME, what)

        task = asyncio.get_running_loop().create_task(logged())
        self._handling.add(task)
        task.add_done_callback(self._handling.discard)

    async def handled(self) -> None:
        """Return once what ``handle_apart`` started has ended."""
        await asyncio.gather(*self._handling, return_exceptions=True)

    async def stop_taking(self) -> None:
        """Stop taking messages (a webhook, an event stream, a poll), once a stop began: by default the ``reading``
        tasks cancelled and waited for."""
        for task in self._reading:
            task.cancel()
        await asyncio.gather(*self._reading, return_exceptions=True)

    async def close(self) -> None:
        """Close what the channel opened (its client), after its turns ended."""

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self.shutdown.loop = asyncio.get_running_loop()
        self.shutdown.install_signal_handlers(self.stop_signals)
        try:
            await self.serve()
            self.ready.set()
            await self.shutdown_requested()
        finally:
            self.ready.set()
            if not self.shutdown.stopping:  # a second call would count as a second Ctrl-C: turns cancelled
                self.begin_shutdown()
            await self.stop_taking()
            if self.jobs is not None:  # no run handed to this channel once its pool is freed (below)
                await asyncio.to_thread(job_router(self.runtime).detach, self.NAME)
            await self.shutdown.finish()  # the turns running get until the deadline; their pool is freed
            await self.tasks.cancel_waiting()  # turns still waiting for their chat: their items stay pending
            await self.close()
