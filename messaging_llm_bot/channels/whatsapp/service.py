"""The WhatsApp channel running: the webhook listening, what a crash left answered, the job scheduler joined
(job runs, reminders, the morning digest), collectors' notices; a stop gives running turns
``shutdown_timeout_seconds``.

Start-up refuses, with one sentence and exit code 2, a config that cannot run (the token's or the app secret's
variable unset, no verify token); with exit code 1 a workspace where another WhatsApp bot runs (a lock file)
or an address the webhook cannot listen on.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from datetime import time as dtime
from zoneinfo import ZoneInfo

from assistant_framework.config.settings import Settings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.contract import Address, DeliveryError, TextOut
from messaging_llm_bot.channels.whatsapp.channel import OutsideWindow, WhatsAppChannel
from messaging_llm_bot.channels.whatsapp.graph import GraphClient, GraphUnavailable
from messaging_llm_bot.channels.whatsapp.intake import Intake
from messaging_llm_bot.channels.whatsapp.message import message_of_payload
from messaging_llm_bot.channels.whatsapp.settings import PREFIX, WhatsAppConfig, conversation_of, number_of
from messaging_llm_bot.channels.whatsapp.turn import NOTICE_KEY, TurnRunner
from messaging_llm_bot.channels.whatsapp.webhook import Webhook
from messaging_llm_bot.channels.whatsapp.window import ServiceWindow
from messaging_llm_bot.conversation.busy import answered_by_recorded
from messaging_llm_bot.conversation.chatqueue import ChatQueues, max_pending
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.held import StorageOutage
from messaging_llm_bot.conversation.job_router import ChannelJobs, OwnerDigest, job_router
from messaging_llm_bot.conversation.job_runs import is_job_item
from messaging_llm_bot.conversation.notices import notify_from_thread, send_digest
from messaging_llm_bot.conversation.pool import pool_size
from messaging_llm_bot.conversation.reminders import DeliveryRefused
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import request_stop, run_own_loop, shutdown_runtime, take_lock

log = logging.getLogger(__name__)

LOCK_FILE = "state/whatsapp.lock"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class WhatsAppService:
    """One running WhatsApp channel: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is
    thread-safe."""

    def __init__(
        self, runtime: Runtime, *, stop_signals: Sequence[int] | None = None, manage_runtime: bool = True
    ) -> None:
        self.runtime = runtime
        self.stop_signals = stop_signals
        self.manage_runtime = manage_runtime  # False when another channel shuts the runtime down
        self.shutdown_timeout = runtime.settings.runtime.shutdown_timeout_seconds
        self.ready = threading.Event()  # listening, the replay started
        self.stopped = threading.Event()
        self.storage = StorageOutage("whatsapp")
        self.queues = ChatQueues("whatsapp", lambda: pool_size(runtime.settings), lambda: max_pending(runtime.settings))
        self.tasks = ChatTasks(self.queues, "whatsapp")
        self.job_clock: Callable[[], datetime] | None = None  # a test's clock for the jobs (None: the real one)
        self.webhook: Webhook | None = None
        self._config: tuple[Settings, WhatsAppConfig] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stopping = False
        self.inbox: Inbox
        self.channel: WhatsAppChannel
        self.turns: TurnRunner

    @property
    def config(self) -> WhatsAppConfig:
        """The ``whatsapp`` record of the runtime's current settings: a ``/reload`` changes the allowlist, the
        owner, the template and typing at once (the rest needs a restart: config/reloadable.py)."""
        current = self.runtime.settings
        if self._config is None or self._config[0] is not current:
            self._config = (current, WhatsAppConfig.from_settings(current))
        return self._config[1]

    @property
    def stopping(self) -> bool:
        return self._stopping

    def run(self) -> int:
        config = self.config
        if config.problem:
            print(f"whatsapp: cannot start: {config.problem}", file=sys.stderr)
            return EXIT_USAGE
        lock = take_lock(self.runtime.workspace, LOCK_FILE, "whatsapp: another WhatsApp bot")
        if lock is None:
            return EXIT_FAILED
        self._loop = loop = asyncio.new_event_loop()
        try:
            done = run_own_loop(loop, self._main(), "whatsapp", "the WhatsApp channel", self._known_error)
        finally:
            lock.release()
            if self.manage_runtime:
                shutdown_runtime(self.runtime, self.shutdown_timeout)
            self.stopped.set()
        return EXIT_OK if done else EXIT_FAILED

    def stop(self, timeout: float | None = None) -> None:
        """Ask a running channel to stop (any thread); with ``timeout``, wait that long for it to end."""
        request_stop(self._loop, self.begin_shutdown, self.stopped, timeout)

    def _known_error(self, err: Exception) -> str | None:
        if isinstance(err, OSError):
            return f"whatsapp: the webhook cannot listen on {self.config.listen}:{self.config.port}: {err}"
        return None

    def begin_shutdown(self, reason: str = "stop requested") -> None:
        if self._stop is None:
            return
        if self._stopping:  # a second Ctrl-C / SIGTERM: do not wait any longer
            self.turns.cancel_all()
            return
        self._stopping = True
        log.info("whatsapp: %s: stopping; messages not yet answered stay in the inbox", reason)
        if hasattr(self, "turns"):
            self.turns.stopping = True
            self.turns.stop_event.set()
        self._stop.set()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in self.stop_signals or ():
            try:
                loop.add_signal_handler(sig, self.begin_shutdown, signal.Signals(sig).name)
            except (NotImplementedError, RuntimeError, ValueError) as err:
                log.warning("whatsapp: cannot handle signal %s (%s); stop with stop()", sig, err)
        workspace = self.runtime.workspace
        config = self.config
        self.inbox = await asyncio.to_thread(Inbox, workspace)
        window = await asyncio.to_thread(ServiceWindow, workspace)
        client = GraphClient(config.base_url, config.phone_number_id, config.access_token)
        self.channel = WhatsAppChannel(client, window, lambda: self.config)
        self.turns = TurnRunner(self.runtime, self.inbox, self.channel, lambda: self.config)
        intake = Intake(self)
        await intake.load()
        self.webhook = Webhook(lambda: self.config, intake.take)
        try:
            self.webhook.start()
            if not config.allowed:
                log.warning(
                    "whatsapp.allowed is empty: the bot answers no one. Add your number: "
                    'config set whatsapp.allowed ["+491701234567"]'
                )
            log.info("whatsapp: serving the webhook on %s for %s", self.webhook.url, [f"+{n}" for n in config.allowed])
            self._replay()
            await self._join_jobs(loop)
            self.runtime.start_background(
                notify=lambda name, text: notify_from_thread(loop, self.send_notice, name, text)
            )
            self.ready.set()
            await self._stop.wait()
        finally:
            self.ready.set()
            await self._wind_down()

    async def _join_jobs(self, loop: asyncio.AbstractEventLoop) -> None:
        digest = None
        if self.config.morning_digest:
            hour, minute = (int(x) for x in self.config.morning_digest.split(":"))
            digest = OwnerDigest(dtime(hour, minute, tzinfo=ZoneInfo(self.config.timezone)), self.morning_digest)
        channel_jobs = ChannelJobs(
            loop,
            self.inbox,
            owner_conversation=self.owner_conversation,
            start=self.start_job,
            send_reminder=self.send_reminder,
            digest=digest,
        )
        await asyncio.to_thread(job_router(self.runtime).attach, "whatsapp", channel_jobs, self.job_clock)

    async def _wind_down(self) -> None:
        if not self._stopping:
            self.begin_shutdown()
        if self.webhook is not None:
            self.webhook.stop()
        turns = self.turns
        if not await turns.wait_idle(self.shutdown_timeout):
            cancelled = turns.cancel_all()
            log.warning(
                "whatsapp: %d turn(s) did not finish within %.0f s; their messages stay in the inbox and are "
                "answered at the next start",
                cancelled,
                self.shutdown_timeout,
            )
            await turns.wait_idle(1.0)
        await self.tasks.cancel_waiting()
        await asyncio.to_thread(job_router(self.runtime).detach, "whatsapp")
        await self.channel.client.close()
        turns.pool.shutdown()

    def _replay(self) -> None:
        """Answer what the last run left in the inbox: job runs and notices, then messages oldest first."""
        items = self.inbox.pending(PREFIX)
        answered = answered_by_recorded(items)  # joined a turn whose reply was recorded: completed with it
        items = [i for i in items if i.item_id not in answered]
        later = [i for i in items if not (is_job_item(i) or NOTICE_KEY in i.payload)]
        if later:
            log.info("whatsapp: answering %d message(s) left unanswered by the last run", len(later))
        for item in [i for i in items if i not in later] + later:
            msg = message_of_payload(item.payload)
            owner = msg is None or self.config.is_owner(msg.sender)
            self.tasks.spawn(item.conversation_id, self.turns.answer(item), owner=owner, exempt=True)

    # -- jobs, reminders, notices -------------------------------------------------------

    def owner_conversation(self, job: Job) -> str | None:
        owner = self.config.owner
        return conversation_of(owner) if owner else None

    def start_job(self, item: InboxItem) -> None:
        """Answer a job run's item in the owner's queue (first, never refused; once while it waits or runs)."""
        self.tasks.spawn_once(item.item_id, item.conversation_id, lambda: self.turns.answer(item))

    async def send_reminder(self, chat_id: object, text: str, conversation: object) -> bool:
        """A reminder to its ``wa:`` chat (as the template outside the window): True when it arrived, False to
        try later (no connection; outside the window without a template: it waits for the next message)."""
        number = number_of(str(chat_id))
        try:
            await self.channel.send_text(Address(number), TextOut(text))
            return True
        except OutsideWindow:
            self.turns.held.setdefault(f"reminder:{chat_id}", conversation_of(number))
            return False
        except DeliveryError as err:
            raise DeliveryRefused(f"the Graph API refused it: {err}") from err
        except GraphUnavailable as err:
            log.info("whatsapp: reminder to %s cannot be sent for now: %s", chat_id, err)
            return False

    async def send_notice(self, text: str) -> bool:
        """A notice to the owner, through the inbox and the ledger like a reply: it goes out once, as the
        template outside the window, or waits there for the owner's next message; never lost."""
        owner = self.config.owner
        if owner is None:
            log.warning("whatsapp: a notice for the owner is not sent: whatsapp.allowed is empty")
            return False
        chat = conversation_of(owner)
        item = await asyncio.to_thread(self.inbox.accept, f"{NOTICE_KEY}:{uuid.uuid4().hex}", chat, {NOTICE_KEY: True})
        if item is None:
            return False
        await asyncio.to_thread(self.inbox.record_reply, item.item_id, text)
        stored = self.inbox.get(item.item_id) or item
        self.tasks.spawn(chat, self.turns.answer(stored), owner=True, exempt=True)
        return True

    def notify_from_thread(self, collector_name: str, text: str) -> None:
        assert self._loop is not None
        notify_from_thread(self._loop, self.send_notice, collector_name, text)

    async def morning_digest(self) -> None:
        await send_digest(self.runtime.workspace, self.config.timezone, self.send_notice)


def run_whatsapp(runtime: Runtime, stop_signals: Sequence[int] | None = (signal.SIGINT, signal.SIGTERM)) -> int:
    """Run the WhatsApp channel for ``runtime`` until interrupted; returns an exit code."""
    return WhatsAppService(runtime, stop_signals=stop_signals).run()
