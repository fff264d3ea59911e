"""The Signal bot: reads the signal-cli event stream, gates, orders and answers messages, and stops cleanly.

Start-up: a lock file in the workspace (one Signal bot per workspace), replay of inbox items a
crash left unanswered, reminders and the morning digest on an asyncio job queue, collectors in the
background, then the event stream. A daemon that is down at start or goes away is logged once per
outage and retried with backoff; the bot never exits because of it.

Each message: the allowlist first (a stranger gets their own id once; nothing is stored, nothing
reaches the model); then commands, or the durable inbox (written before the next event is read)
and a turn in the chat's FIFO.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from datetime import time as dtime
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import filelock

from assistant_framework.config.settings import Settings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from assistant_framework.stores.reminders import ReminderStore
from messaging_llm_bot.frontends import commands as texts
from messaging_llm_bot.frontends.chatqueue import ChatQueues, max_pending
from messaging_llm_bot.frontends.digest import build_digest
from messaging_llm_bot.frontends.held import StorageOutage, held_text
from messaging_llm_bot.frontends.job_runs import JobScheduler, is_job_item
from messaging_llm_bot.frontends.jobs import AsyncJobQueue, DailyJob
from messaging_llm_bot.frontends.pool import pool_size
from messaging_llm_bot.frontends.reminders import DeliveryRefused, ReminderScheduler, reminder_channel
from messaging_llm_bot.frontends.run import enabled_frontends
from messaging_llm_bot.frontends.runtime import Runtime
from messaging_llm_bot.frontends.signal.approval import Approvals
from messaging_llm_bot.frontends.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.frontends.signal.identity import Identities
from messaging_llm_bot.frontends.signal.settings import (
    PREFIX,
    SignalMessage,
    SignalSettings,
    addressed_to_bot,
    chat_of_conversation,
    is_bot,
    parse_event,
    refusal_text,
)
from messaging_llm_bot.frontends.signal.turn import Outage, TurnRunner, send_parts

log = logging.getLogger(__name__)

T = TypeVar("T")

LOCK_FILE = "state/signal.lock"
REFUSED_LOG = "state/signal/refused.log"
REMINDER_POLL_SECONDS = 30.0
BACKOFF_START_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 30.0
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
RESET_CONFIRM = "yes"


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
        self._settings: tuple[Settings, SignalSettings] | None = None
        self.stop_signals = stop_signals
        self.reminder_poll_seconds = reminder_poll_seconds
        self.manage_runtime = manage_runtime  # False when another frontend shuts the runtime down
        self.backoff_max = backoff_max
        self.shutdown_timeout = runtime.settings.runtime.shutdown_timeout_seconds
        self.ready = threading.Event()
        self.stopped = threading.Event()
        self._client: SignalClient | None = None
        self._turns: TurnRunner | None = None
        self._inbox: Inbox | None = None
        self.outage = Outage(self.settings.base_url)
        self.storage = StorageOutage("signal")  # the inbox cannot store: the stream waits, the message is held
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stopping = False
        # Per chat: arrival order, at most runtime.max_pending_per_chat, the owner first; as many at once as
        # the turn pool has threads.
        self.queues = ChatQueues("signal", lambda: pool_size(runtime.settings), lambda: max_pending(runtime.settings))
        self._tasks: set[asyncio.Task] = set()
        self.job_items: set[str] = set()  # job runs waiting in the owner's queue or running
        #: The jobs' clock (a test's controlled clock; None: the real one).
        self.job_clock: Callable[[], datetime] | None = None
        self._refused: set[str] = set()
        self._connected_once = False

    # The parts made when the service starts (``_main``); the event handlers run only after that.
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
    def settings(self) -> SignalSettings:
        """The ``signal`` settings of the runtime's current records: a ``/reload`` (from this chat or another
        frontend) changes the allowlist, the owner, the group mode and typing at once; the keys that need a
        restart keep their running value there (assistant_framework/config/reloadable.py)."""
        current = self.runtime.settings
        if self._settings is None or self._settings[0] is not current:
            self._settings = (current, SignalSettings.from_settings(current))
        return self._settings[1]

    # -- running ------------------------------------------------------------------

    def run(self) -> int:
        """Run until stopped; returns the process exit code."""
        if not self.settings.account:
            print(
                "signal: no account: set signal.account to the bot's number (E.164, e.g. +4915112345678)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        lock = filelock.FileLock(str(self.runtime.workspace.path(LOCK_FILE)), mode=0o600)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            print(
                f"signal: another Signal bot is already running on workspace {self.runtime.workspace.root} "
                f"({LOCK_FILE} is held); stop it first",
                file=sys.stderr,
            )
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
                    self._shutdown_runtime()
                self.stopped.set()
        return code

    def _shutdown_runtime(self) -> None:
        try:
            self.runtime.shutdown(self.shutdown_timeout)
        except Exception as err:  # noqa: BLE001 - shutting down: report, do not mask the exit code
            log.warning("runtime shutdown failed: %s", err)

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
        """Stop reading events, give running turns ``shutdown_timeout`` seconds (loop thread)."""
        if self._stop is None:
            return
        if self._stopping:  # a second Ctrl-C / SIGTERM: do not wait any longer
            if self._turns is not None:
                self._turns.cancel_all()
            return
        self._stopping = True
        running = self._turns.active if self._turns is not None else 0
        log.info(
            "signal: %s: stopping; waiting up to %.0f s for %d turn(s) in flight; messages not yet "
            "answered stay in the inbox",
            reason,
            self.shutdown_timeout,
            running,
        )
        if self._turns is not None:
            self._turns.stopping = True
            self._turns.stop_event.set()
        self._stop.set()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        for sig in self.stop_signals or ():
            try:
                asyncio.get_running_loop().add_signal_handler(sig, self.begin_shutdown, signal.Signals(sig).name)
            except (NotImplementedError, RuntimeError, ValueError) as err:
                log.warning("signal: cannot handle signal %s (%s); stop with stop()", sig, err)
        self._client = client = SignalClient(self.settings.base_url, self.settings.account)
        self._inbox = inbox = await asyncio.to_thread(Inbox, self.runtime.workspace)
        self.identities = await asyncio.to_thread(Identities, self.runtime.workspace)
        self.approvals = Approvals(client)
        self._turns = turns = TurnRunner(
            self.runtime, inbox, client, lambda: self.settings, self.outage, self.identities, self.approvals
        )
        self._refused = set(await asyncio.to_thread(self._load_refused))
        if not self.settings.allowed:
            log.warning(
                "signal.allowed is empty: the bot answers no one. Send it a message to see your "
                'Signal id, then add it with: config set signal.allowed ["+NUMBER"]'
            )
        log.info(
            "signal: serving %s through signal-cli at %s for %s",
            self.settings.account,
            self.settings.base_url,
            list(self.settings.allowed),
        )
        self._start_replay()
        jobs = AsyncJobQueue()
        reminders = ReminderScheduler(
            ReminderStore(self.runtime.workspace),
            jobs,
            self.send_reminder,
            default_tz=self.settings.timezone,
            poll_seconds=self.reminder_poll_seconds,
            channel="signal",
        )
        reminders.start()
        scheduler = JobScheduler(
            self.runtime.workspace,
            inbox,
            jobs,
            claim=self.claim_job,
            start=self.start_job_item,
            settings=lambda: self.runtime.settings,
            clock=self.job_clock,
            prefix=PREFIX,
        )
        scheduler.start()
        if self.settings.morning_digest:
            hour, minute = (int(x) for x in self.settings.morning_digest.split(":"))
            DailyJob(
                jobs,
                self._morning_digest,
                dtime(hour, minute, tzinfo=ZoneInfo(self.settings.timezone)),
                "signal:morning-digest",
            ).start()
        self.runtime.start_background(notify=self.notify_from_thread)
        consumer = asyncio.get_running_loop().create_task(self._consume())
        self.ready.set()
        try:
            await self._stop.wait()
        finally:
            consumer.cancel()
            await asyncio.gather(consumer, return_exceptions=True)
            if not self._stopping:  # a second call would count as a second Ctrl-C and cancel the turns at once
                self.begin_shutdown()
            if not await turns.wait_idle(self.shutdown_timeout):
                cancelled = turns.cancel_all()
                log.warning(
                    "signal: %d turn(s) did not finish within %.0f s; their messages stay in the inbox "
                    "and are answered at the next start",
                    cancelled,
                    self.shutdown_timeout,
                )
                await turns.wait_idle(1.0)
            for task in list(self._tasks):  # turns still waiting for their chat: their items stay pending
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            scheduler.stop()
            await jobs.stop()
            await client.close()
            turns.pool.shutdown()

    # -- the event stream ---------------------------------------------------------

    def _on_open(self) -> None:
        self.outage.ok()
        if not self._connected_once:
            self._connected_once = True
            log.info("signal: connected to the signal-cli event stream at %s", self.settings.base_url)

    async def _consume(self) -> None:
        """Read events until stopped; reconnect with backoff, logging an outage once."""
        delay = BACKOFF_START_SECONDS
        while not self._stopping:
            opened = False

            def on_open() -> None:
                nonlocal opened, delay
                opened, delay = True, BACKOFF_START_SECONDS
                self._on_open()

            try:
                async for obj in self.client.events(on_open=on_open):
                    await self._on_event(obj)
                raise SignalUnavailable("the event stream ended")
            except SignalUnavailable as err:
                self.outage.failed(err)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a bug in one event must not end the stream for good
                log.exception("signal: reading the event stream failed")
            if not opened or self.outage.down:
                await self._sleep(delay)
                delay = min(delay * 2, self.backoff_max)

    async def _sleep(self, seconds: float) -> None:
        stop = _started(self._stop)
        try:
            await asyncio.wait_for(stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _on_event(self, obj: dict) -> None:
        msg = parse_event(obj)
        if msg is None or is_bot(msg.number, msg.uuid, self.settings.account, None):
            return
        sender = self.identities.judge(msg, self.settings)
        if not sender.allowed:
            if sender.mismatch is None:  # a number that belongs to another account gets no answer at all
                await self._refuse(msg)
            return
        if msg.number and msg.uuid and self.identities.pinned(msg.number) is None:
            await asyncio.to_thread(self.identities.pin, msg, sender)  # the number's first message with an account
        if sender.owner_chat(msg) and msg.kind() == "text" and self.approvals.resolve(msg.chat, msg.text):
            return  # the answer to an open confirmation question, not a new message
        owner = sender.owner  # in any chat: never refused over the limit, and first for a free slot
        if msg.kind() == "text" and msg.text.startswith("/"):
            if msg.text.strip()[1:].partition(" ")[0].lower() == "stop":
                await self._stop_turn(msg)  # about the turn this chat's queue waits for: not queued behind it
                return
            if not self._spawn(msg.chat, self._command(msg), owner=owner):
                await self._over_limit(msg)
            return
        if not addressed_to_bot(msg, self.settings):
            return
        if self.inbox.seen(msg.source_id):
            log.info(
                "signal: message %s from %s was already accepted; skipping the duplicate", msg.timestamp, msg.sender
            )
            return
        if not owner and self.queues.full(msg.chat):
            await self._over_limit(msg)  # not stored: the chat's backlog is long enough
            return
        stored, item = await self._store(msg, obj, owner)
        if not stored:
            return
        if item is None:
            log.info(
                "signal: message %s from %s was already accepted; skipping the duplicate", msg.timestamp, msg.sender
            )
            return
        # Not full a moment ago, and only this coroutine adds to the queue: admitted (exempt says so).
        self._spawn(msg.chat, self.turns.answer(item), owner=owner, exempt=True)

    async def _store(self, msg: SignalMessage, obj: dict, owner: bool) -> tuple[bool, InboxItem | None]:
        """Put the message into the inbox; (True, the item or None for a duplicate), (False, None) at a stop.

        While the inbox cannot store it (disk full, read-only, out of descriptors) the stream is not read
        further: the daemon keeps what follows (in the connection, and in manual receive mode on the Signal
        server), this message is held here and tried again with a growing pause (frontends/held.py), its
        chat told once. signal-cli cannot deliver it again: a stop meanwhile loses it (logged)."""
        while True:
            try:
                item = await asyncio.to_thread(self.inbox.accept, msg.source_id, msg.conversation_id, obj)
            except OSError as err:
                pause = self.storage.failed(err, f"the message {msg.timestamp} from {msg.sender}")
                if self.storage.tell(msg.chat):
                    self._spawn(msg.chat, self._say(msg, held_text(err)), owner=owner, exempt=True)
                try:
                    if not self._stopping:
                        await self._sleep(pause)
                except asyncio.CancelledError:
                    self._lost(msg)
                    raise
                if self._stopping:
                    self._lost(msg)
                    return False, None
                continue
            self.storage.ok()
            return True, item

    @staticmethod
    def _lost(msg: SignalMessage) -> None:
        log.warning(
            "signal: stopped while the message %s from %s waited for the inbox: it is lost (signal-cli does not "
            "deliver a message again); ask them to send it again",
            msg.timestamp,
            msg.sender,
        )

    def _spawn(self, chat: str, coro: Coroutine, *, owner: bool = False, exempt: bool = False) -> bool:
        """Queue ``coro`` in ``chat`` (frontends/chatqueue.py: arrival order, the owner first); False (and
        ``coro`` closed) when the chat already holds ``runtime.max_pending_per_chat`` jobs."""
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
                log.exception("signal: handling a message in %s failed", chat)

        task = asyncio.get_running_loop().create_task(in_order())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _over_limit(self, msg: SignalMessage) -> None:
        """A message beyond its chat's ``runtime.max_pending_per_chat``: not answered, not stored; the chat
        is told once per backlog."""
        if self.queues.refused(msg.chat):
            await self._say(msg, texts.backlog_text(self.queues.pending(msg.chat)))

    def start_job_item(self, item: InboxItem) -> None:
        """Answer a job run's item in the owner's queue (first, never refused); once at a time."""
        if item.item_id in self.job_items:
            return
        self.job_items.add(item.item_id)

        async def run() -> None:
            try:
                await self.turns.answer(item)
            finally:
                self.job_items.discard(item.item_id)

        self._spawn(chat_of_conversation(item.conversation_id), run(), owner=True, exempt=True)

    def claim_job(self, job: Job) -> str | None:
        """The conversation a job's runs go to here: the owner's direct chat, for jobs made on Signal, or made
        by hand (no chat) when Telegram is not running; never another chat whatever the row says."""
        owner = self.settings.owner
        if owner is None:
            return None
        if job.chat_id in (None, ""):
            return None if "telegram" in enabled_frontends(self.runtime.settings) else PREFIX + owner
        return PREFIX + owner if reminder_channel(job.chat_id) == "signal" else None

    def _start_replay(self) -> None:
        for item in [i for i in self.inbox.pending(PREFIX) if is_job_item(i)]:
            self.start_job_item(item)  # a job run left by a crash
        items = [i for i in self.inbox.pending(PREFIX) if not is_job_item(i)]
        if items:
            log.info("signal: answering %d message(s) left unanswered by the last run", len(items))
        for item in items:  # oldest first; accepted before, so never refused
            msg = parse_event(item.payload)
            owner = msg is not None and self.identities.judge(msg, self.settings).owner
            self._spawn(chat_of_conversation(item.conversation_id), self.turns.answer(item), owner=owner, exempt=True)

    # -- strangers ----------------------------------------------------------------

    def _load_refused(self) -> list[str]:
        return [
            ln.strip() for ln in self.runtime.workspace.read_text(REFUSED_LOG, default="").splitlines() if ln.strip()
        ]

    async def _refuse(self, msg: SignalMessage) -> None:
        who = msg.uuid or msg.number or "?"
        # A stranger is told only when they address the bot, whatever signal.group_mode says.
        mentioned_only = dataclasses.replace(self.settings, group_mode="mention")
        if msg.group_id is not None and not addressed_to_bot(msg, mentioned_only):
            return  # a group conversation not addressed to the bot: stay quiet
        if who in self._refused:
            log.info("signal: ignored %s again (not in signal.allowed; already told)", who)
            return
        log.info("signal: refused %s (not in signal.allowed)", " / ".join(x for x in (msg.number, msg.uuid) if x))
        self._refused.add(who)
        try:
            await asyncio.to_thread(self.runtime.workspace.append_line, REFUSED_LOG, who)
        except OSError as err:
            log.warning("signal: could not remember the refusal of %s: %s", who, err)
        await self._say(msg, refusal_text(msg))

    async def _say(self, msg: SignalMessage, text: str) -> None:
        try:
            await send_parts(self.client, msg.chat, text, quote=msg if msg.group_id else None)
        except (SignalRpcError, SignalUnavailable) as err:
            log.info("signal: message to %s failed: %s", msg.chat, err)

    # -- commands -----------------------------------------------------------------

    async def _stop_turn(self, msg: SignalMessage) -> None:
        """Stop the turn running in this chat; an open confirmation question counts as declined."""
        stopped = self.runtime.agent.stop(msg.conversation_id)
        if stopped:
            self.approvals.resolve(msg.chat, "no")
        await self._say(msg, texts.STOPPING_TEXT if stopped else texts.NOTHING_TO_STOP_TEXT)

    async def _command(self, msg: SignalMessage) -> None:
        text = msg.text.strip()
        name, _, rest = text[1:].partition(" ")
        name, rest = name.lower(), rest.strip()
        owner_chat = self.identities.judge(msg, self.settings).owner_chat(msg)
        conversation = msg.conversation_id
        if name == "reset":
            if rest.lower() == RESET_CONFIRM:
                reply = await asyncio.to_thread(self.runtime.agent.reset, conversation)
            else:
                reply = (
                    "This clears the message history of this conversation, so I forget what we talked about "
                    "here. Notes, tasks, reminders, learnings and other saved data are kept.\n\n"
                    f"Send /reset {RESET_CONFIRM} to clear it."
                )
        else:
            # The same owner-only rule as Telegram (assistant_framework.access): /now, /reload, /stats and
            # /status details only in the owner's own direct chat.
            answered = await asyncio.to_thread(
                texts.run_command, self.runtime, conversation, text, owner_data=owner_chat
            )
            reply = answered if answered is not None else f"Unknown command /{name}. /help lists what I understand."
        await self._say(msg, reply)

    # -- outgoing notices -----------------------------------------------------------

    async def send_notice(self, chat_id: Any, text: str) -> bool:
        """Send text to a ``sig:`` chat, or to the owner when ``chat_id`` is empty; True if it arrived."""
        chat = chat_of_conversation(str(chat_id)) if chat_id not in (None, "") else self.settings.owner
        if not chat:
            return False
        try:
            await send_parts(self.client, chat, text)
            return True
        except (SignalRpcError, SignalUnavailable) as err:
            log.warning("signal: notice to %s failed: %s", chat, err)
            return False

    async def send_reminder(self, chat_id: Any, text: str) -> bool:
        """Send a reminder to its ``sig:`` chat: True when it arrived, False to try again later (daemon gone,
        rate limited, no network); DeliveryRefused when signal-cli refused it for good (not a Signal user)."""
        chat = chat_of_conversation(str(chat_id))
        try:
            await send_parts(self.client, chat, text)
            return True
        except SignalRpcError as err:
            if not err.transient:
                types = ", ".join(sorted(t for t in err.result_types if t))
                reason = f"signal-cli refused it: {err.message}" + (f" ({types})" if types else "")
                raise DeliveryRefused(reason) from err
            # The scheduler warns once per reminder; each retry's cause goes to the log at INFO.
            log.info("signal: reminder to %s cannot be sent for now: %s", chat, err)
        except SignalUnavailable as err:
            log.info("signal: reminder to %s failed: %s", chat, err)
        return False

    def notify_from_thread(self, collector_name: str, text: str) -> None:
        """Collector callback (background thread): a short notice to the owner."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(self.send_notice(None, texts.collector_notice(collector_name, text)), loop)
        except RuntimeError:
            pass  # the loop is closing

    def digest_text(self) -> str:
        """The /now digest for this moment (no model call)."""
        tz = self.settings.timezone
        return build_digest(self.runtime.workspace, datetime.now(ZoneInfo(tz)), tz)

    async def _morning_digest(self, context: Any) -> None:
        await self.send_notice(None, await asyncio.to_thread(self.digest_text))


def run_signal(runtime: Runtime, stop_signals: Sequence[int] | None = (signal.SIGINT, signal.SIGTERM)) -> int:
    """Run the Signal frontend for ``runtime`` until interrupted; returns an exit code."""
    return SignalService(runtime, stop_signals=stop_signals).run()


def _started(part: T | None) -> T:
    if part is None:
        raise RuntimeError("the Signal frontend is not started")
    return part
