"""The process's one scheduler, whatever channels run: jobs, reminders and the morning digest, each handed to
the channel it belongs to.

Each channel attaches when it starts (``job_router(runtime).attach``) with its event loop, its inbox, which
conversation a job of its own goes to (the owner's chat) and how it answers a run's item; it detaches when
it stops. The first to attach starts the one ``JobScheduler`` (conversation/job_scheduler.py) on a thread of its
own; the last to detach stops it. A job's channel is found once, by the registry of chat-id prefixes
(conversation/routes.py): the channel its chat id names, or for a job made without a chat (by hand) the
first configured channel. A job whose channel does not run in this process is left alone: its runs are
made when that channel runs.

Reminders are planned here too, once for the process (conversation/reminders.py on the scheduler's loop):
each due one is sent by the channel its chat id names (``ChannelJobs.send_reminder``, on that channel's
loop); one of a channel not running here stays pending until it runs. Each channel's morning digest (its
own time, from its config) is a daily job here that the channel sends to its owner. How a running channel
asks its owner from outside a chat (``ChannelJobs.ask_owner``) is read here too (``owner_approver``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from datetime import time as dtime
from typing import Any
from zoneinfo import ZoneInfo

from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.inbox.item import InboxPayload
from assistant_framework.jobs import Job
from assistant_framework.schedules import from_iso, to_iso
from assistant_framework.stores.reminders import ReminderStore
from messaging_llm_bot.agent.guard import ApprovalRequest
from messaging_llm_bot.conversation.approvals import Answer
from messaging_llm_bot.conversation.job_runs import JobRun
from messaging_llm_bot.conversation.job_scheduler import JobScheduler, outside_job
from messaging_llm_bot.conversation.jobs import AsyncJobQueue, DailyJob
from messaging_llm_bot.conversation.reminders import POLL_SECONDS, ReminderScheduler
from messaging_llm_bot.conversation.routes import channel_of, home_channel, prefix_of, route_of_conversation
from messaging_llm_bot.conversation.runtime import Runtime

log = logging.getLogger(__name__)

#: When each channel's last morning digest sent was due: a start later that day sends a missed one.
DIGESTS_SENT = "state/digests-sent.json"
STOP_SECONDS = 10.0  # for the scheduler's thread to end when the last channel stops
FINISH_SECONDS = 2.0  # then for a reminder or digest being sent to be sent and marked


class NotRunning(RuntimeError):
    """No channel that could take a run runs in this process now."""


@dataclass(frozen=True)
class ChannelJobs:
    """What a channel gives the scheduler: where its runs are stored and answered."""

    loop: asyncio.AbstractEventLoop  # ``start`` is called on this loop
    inbox: Inbox  # the channel's inbox: a run is accepted into the inbox that answers it
    owner_conversation: Callable[[Job], str | None]  # the owner's conversation for a job of this channel
    start: Callable[[InboxItem], None]  # answer a run's item (in the owner's chat queue)
    # Sends a due reminder to its chat (chat id, Markdown, the conversation it was set in): True when it
    # arrived, False to try again; raises DeliveryRefused when the chat refused it for good. None: the
    # channel takes no reminders (they stay pending).
    send_reminder: Callable[[object, str, object], Coroutine[Any, Any, bool]] | None = None
    digest: OwnerDigest | None = None  # the owner's morning digest, when the channel's config asks for one
    reminder_poll_seconds: float = POLL_SECONDS  # how often the store is read for new reminders (tests: less)
    # Asks the owner in their own chat on this channel, blocking the calling thread till they answer (a served
    # client's ``ask`` call with ``approve_in_chat``; conversation/approvals.py). None: the channel cannot.
    ask_owner: Callable[[ApprovalRequest], Answer] | None = None


@dataclass(frozen=True)
class OwnerDigest:
    """A channel's morning digest: when (a wall time with its zone) and how it is sent to the owner."""

    at: dtime
    send: Callable[[], Coroutine[Any, Any, None]]  # on the channel's loop


class _ChannelInboxes:
    """The scheduler's inbox: a run is accepted into its channel's inbox; left-over runs of every channel here."""

    def __init__(self, channels: Callable[[], dict[str, ChannelJobs]]) -> None:
        self._channels = channels

    def accept(self, source_id: str, conversation_id: str, payload: InboxPayload) -> InboxItem | None:
        route = route_of_conversation(conversation_id)
        jobs = self._channels().get(route.channel) if route is not None else None
        if jobs is None:  # the channel stopped since the claim: the run is planned again at the next look
            raise RuntimeError(f"no channel runs {conversation_id} now")
        return jobs.inbox.accept(source_id, conversation_id, payload)

    def pending(self, prefix: str = "") -> list[InboxItem]:
        items: list[InboxItem] = []
        for name, jobs in self._channels().items():
            items += jobs.inbox.pending(prefix_of(name))
        return sorted(items, key=lambda item: (item.seq, item.item_id))


class JobRouter:
    """The one scheduler of a process (of one runtime), shared by the channels running in it."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.scheduler: JobScheduler | None = None
        self._channels: dict[str, ChannelJobs] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._queue: AsyncJobQueue | None = None
        self.reminders: ReminderScheduler | None = None
        self._digests: dict[str, DailyJob] = {}  # each channel's morning digest (on the scheduler's loop)
        self._clock: Callable[[], datetime] = _utc_now  # one wall clock for jobs, reminders and digests (a test's)

    def attach(self, channel: str, jobs: ChannelJobs, clock: Callable[[], datetime] | None = None) -> JobScheduler:
        """Run ``channel``'s jobs from now on; starts the scheduler for the first channel (with its ``clock``)."""
        prefix_of(channel)  # a channel not in the registry cannot be routed to: fail at its start
        with self._lock:
            self._channels[channel] = jobs
            if self.scheduler is None:
                ready = threading.Event()
                self._thread = threading.Thread(target=self._run, args=(ready, clock), name="jobs", daemon=True)
                self._thread.start()
                ready.wait(STOP_SECONDS)
            elif self._loop is not None:  # its left-over runs and due ones now, not at the next planned look
                self._loop.call_soon_threadsafe(self._joined, channel, jobs)
            assert self.scheduler is not None
            log.info("jobs: %s joined the scheduler", channel)
            return self.scheduler

    def detach(self, channel: str) -> None:
        """Stop handing runs to ``channel``; the last one out stops the scheduler (blocks until it ended)."""
        with self._lock:
            self._channels.pop(channel, None)
            if self._channels or self._thread is None:
                if self._loop is not None:  # its reminders stay pending; its digest is no longer sent
                    self._loop.call_soon_threadsafe(self._left, channel)
                return
            loop, done, thread = self._loop, self._done, self._thread
            # A channel attaching from now on starts a new scheduler.
            self._thread = self.scheduler = self._loop = self._done = self._queue = self.reminders = None
        _forget(self)
        if loop is not None and done is not None:
            try:
                loop.call_soon_threadsafe(done.set)
            except RuntimeError:
                pass  # the loop ended already
        thread.join(STOP_SECONDS)

    def claim(self, job: Job) -> str | None:
        """The conversation a job's runs go to: its channel's owner conversation, when that channel runs here."""
        channel = channel_of(job.chat_id) if job.chat_id not in (None, "") else home_channel(self.runtime.settings)
        jobs = self._attached().get(channel)
        return jobs.owner_conversation(job) if jobs is not None else None

    def submit(self, chat: str | None, run: JobRun) -> InboxItem | None:
        """Accept a run made outside the schedule (a hook's) into the inbox of ``chat``'s channel (None: the
        home channel) in its owner's chat, and start it; None when its id was accepted before (a replay).
        Raises ``NotRunning`` when no channel here runs that chat."""
        job = outside_job(chat)
        conversation = self.claim(job)
        if conversation is None:
            raise NotRunning(f"no channel runs {chat or 'the home chat'} in this process now")
        item = _ChannelInboxes(self._attached).accept(run.run_id, conversation, run.payload())
        if item is not None:
            self.dispatch(item)
        return item

    def look_soon(self) -> None:
        """Look at the jobs now (a run was asked for), not at the planned time."""
        loop = self._loop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._look_now)
            except RuntimeError:  # the scheduler stopped: its next start looks
                pass

    def _look_now(self) -> None:
        if self.scheduler is not None:
            self.scheduler.look_soon()

    def dispatch(self, item: InboxItem) -> None:
        """Hand a run's item to its channel, on the channel's loop; an item of no channel here waits."""
        route = route_of_conversation(item.conversation_id)
        jobs = self._attached().get(route.channel) if route is not None else None
        if jobs is None:
            return

        def start_if_pending() -> None:
            # On the channel's loop, where its runs end: a run the look listed as pending may have been answered
            # and completed since (its own start ended meanwhile); offered again it would be answered twice.
            current = jobs.inbox.get(item.item_id)
            if current is not None:
                jobs.start(current)

        try:
            jobs.loop.call_soon_threadsafe(start_if_pending)
        except RuntimeError:  # the channel's loop closed while it stopped: the item waits for the next start
            log.info("jobs: %s not started: its channel stopped", item.item_id)

    def _attached(self) -> dict[str, ChannelJobs]:
        with self._lock:
            return dict(self._channels)

    def _joined(self, channel: str, jobs: ChannelJobs) -> None:
        """On the scheduler's loop: a channel joined a running scheduler."""
        if self.scheduler is not None:
            self.scheduler.look_soon()
        if self.reminders is not None:
            self.reminders.sync()  # its pending reminders are planned now
        self._plan_digest(channel, jobs)

    def _left(self, channel: str) -> None:
        self._digests.pop(channel, None)
        if self._queue is not None:
            for job in self._queue.get_jobs_by_name(_digest_name(channel)):
                job.schedule_removal()

    def _plan_digest(self, channel: str, jobs: ChannelJobs) -> None:
        digest = jobs.digest
        if digest is None or self._queue is None:
            return
        self._left(channel)  # one daily digest per channel, whatever attached before
        loop = jobs.loop

        async def send(context: object) -> None:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(digest.send(), loop))

        self._digests[channel] = DailyJob(
            self._queue,
            send,
            digest.at,
            _digest_name(channel),
            self._clock,
            last=self._digest_sent().get(channel),
            ran=lambda due: self._digest_was_sent(channel, due),
        ).start()

    def _digest_sent(self) -> dict[str, datetime]:
        """When each channel's last digest sent was due (``DIGESTS_SENT``); {} when unknown or unreadable."""
        try:
            kept = self.runtime.workspace.read_json(DIGESTS_SENT, default={})
        except (OSError, ValueError) as err:
            log.warning("jobs: %s could not be read (%s); a digest missed today is not made up", DIGESTS_SENT, err)
            return {}
        if not isinstance(kept, dict):
            return {}
        return {name: moment for name, value in kept.items() if (moment := from_iso(str(value))) is not None}

    def _digest_was_sent(self, channel: str, due: datetime) -> None:
        kept = {name: to_iso(moment) for name, moment in self._digest_sent().items()}
        try:
            self.runtime.workspace.write_json(DIGESTS_SENT, {**kept, channel: to_iso(due)})
        except OSError as err:  # a full disk: the digest went out; a restart today may send it again
            log.warning("jobs: %s could not be written: %s", DIGESTS_SENT, err)

    def digest_due(self, channel: str) -> datetime | None:
        """When ``channel``'s next morning digest is sent; None when it has none here."""
        daily = self._digests.get(channel)
        return daily.due if daily is not None else None

    def owner_approver(self, channel: str) -> Callable[[ApprovalRequest], Answer] | None:
        """How to ask the owner on ``channel`` now (its ``ChannelJobs.ask_owner``); None when it does not run here
        or cannot ask (a served client's ``ask`` call is then refused)."""
        jobs = self._attached().get(channel)
        return jobs.ask_owner if jobs is not None else None

    def attached_channels(self) -> frozenset[str]:
        """The channels running in this process now."""
        return frozenset(self._attached())

    async def send_reminder(self, chat_id: object, text: str, conversation: object = None) -> bool:
        """A due reminder sent by the channel its chat id names, on that channel's loop; False (try again)
        when that channel left meanwhile."""
        jobs = self._attached().get(channel_of(chat_id))
        if jobs is None or jobs.send_reminder is None:
            return False
        sent: concurrent.futures.Future[bool] = asyncio.run_coroutine_threadsafe(
            jobs.send_reminder(chat_id, text, conversation), jobs.loop
        )
        return await asyncio.wrap_future(sent)

    def _run(self, ready: threading.Event, clock: Callable[[], datetime] | None) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(ready, clock))
        except Exception:  # noqa: BLE001 - the chats go on without jobs; the log says why
            log.exception("jobs: the scheduler stopped")
        finally:
            ready.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self, ready: threading.Event, clock: Callable[[], datetime] | None) -> None:
        self._done = done = asyncio.Event()
        self._clock = clock or _utc_now
        queue = AsyncJobQueue(self._clock)
        self.scheduler = scheduler = JobScheduler(
            self.runtime.workspace,
            _ChannelInboxes(self._attached),
            queue,
            claim=self.claim,
            start=self.dispatch,
            settings=lambda: self.runtime.settings,
            clock=self._clock,
        )
        scheduler.start()
        self._queue = queue
        ready.set()  # attach() holds the lock until here: what follows reads the channels
        first = self._attached()
        poll = min((jobs.reminder_poll_seconds for jobs in first.values()), default=POLL_SECONDS)
        queue.recheck_seconds = poll  # a reminder's or a digest's time is read again at each poll
        self.reminders = ReminderScheduler(
            ReminderStore(self.runtime.workspace),
            queue,
            self.send_reminder,
            default_tz=self.runtime.settings.runtime.timezone,
            poll_seconds=poll,
            channels=self._reminder_channels,
            conversation=True,  # Telegram: a reminder set in a forum topic goes to that topic
            clock=self._clock,
        )
        self.reminders.start()
        for channel, jobs in first.items():
            self._plan_digest(channel, jobs)
        try:
            await done.wait()
        finally:
            scheduler.stop()
            await queue.stop(finish_seconds=FINISH_SECONDS)

    def _reminder_channels(self) -> frozenset[str]:
        return frozenset(name for name, jobs in self._attached().items() if jobs.send_reminder is not None)


def owner_digest(at: str | None, timezone: str, send: Callable[[], Coroutine[Any, Any, None]]) -> OwnerDigest | None:
    """A channel's ``morning_digest`` ("07:30", or empty for none) in ``timezone``, sent by ``send``."""
    if not at:
        return None
    hour, minute = (int(x) for x in at.split(":"))
    return OwnerDigest(dtime(hour, minute, tzinfo=ZoneInfo(timezone)), send)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _digest_name(channel: str) -> str:
    return f"{channel}:morning-digest"


#: The routers in use, by ``id`` of their runtime (a runtime is not hashable); one leaves with its last channel.
_ROUTERS: dict[int, JobRouter] = {}
_ROUTERS_LOCK = threading.Lock()


def job_router(runtime: Runtime) -> JobRouter:
    """The job router of ``runtime`` (one runtime per process: one scheduler per process)."""
    with _ROUTERS_LOCK:
        router = _ROUTERS.get(id(runtime))
        if router is None or router.runtime is not runtime:
            router = _ROUTERS[id(runtime)] = JobRouter(runtime)
        return router


def _forget(router: JobRouter) -> None:
    with _ROUTERS_LOCK:
        if _ROUTERS.get(id(router.runtime)) is router:
            del _ROUTERS[id(router.runtime)]
