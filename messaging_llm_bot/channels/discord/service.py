"""The Discord channel running: logged in, the gateway connected (discord.py reconnects and resumes), what a crash
left answered, the job scheduler joined (job runs and reminders to the owner's DM), collectors' notices; a stop
gives running turns ``shutdown_timeout_seconds`` (conversation/shutdown.py).

Start-up refuses, with one sentence and exit code 2, a config that cannot run (no token) or a missing discord.py;
with exit code 1 a workspace where another Discord bot runs (a lock file), a token Discord refuses, or an
application without the message content intent.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from assistant_framework.config.settings import Settings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.contract import DeliveryError, TextOut
from messaging_llm_bot.channels.discord.api import DiscordUnavailable, call
from messaging_llm_bot.channels.discord.channel import DiscordChannel
from messaging_llm_bot.channels.discord.gateway import INTENTS_HELP, log_in, make_client
from messaging_llm_bot.channels.discord.intake import Intake
from messaging_llm_bot.channels.discord.settings import PREFIX, DiscordConfig, conversation_of
from messaging_llm_bot.channels.discord.turn import NOTICE_KEY, TurnRunner, address_of
from messaging_llm_bot.conversation.busy import answered_by_recorded
from messaging_llm_bot.conversation.chatqueue import ChatQueues, max_pending
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.held import StorageOutage
from messaging_llm_bot.conversation.job_router import ChannelJobs, job_router
from messaging_llm_bot.conversation.job_runs import is_job_item
from messaging_llm_bot.conversation.notices import notify_from_thread
from messaging_llm_bot.conversation.owner_chats import note_owner_chat
from messaging_llm_bot.conversation.pool import pool_size
from messaging_llm_bot.conversation.reminders import DeliveryRefused
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import ChannelStop, shutdown_runtime, take_lock

if TYPE_CHECKING:
    import discord

log = logging.getLogger(__name__)

LOCK_FILE = "state/discord.lock"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class StartFailed(Exception):
    """The channel cannot run: the sentence for the owner's screen."""


class DiscordService:
    """One running Discord channel: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is
    thread-safe."""

    def __init__(
        self, runtime: Runtime, *, stop_signals: Sequence[int] | None = None, manage_runtime: bool = True
    ) -> None:
        self.runtime = runtime
        self.stop_signals = stop_signals
        self.manage_runtime = manage_runtime  # False when another channel shuts the runtime down
        self.shutdown_timeout = runtime.settings.runtime.shutdown_timeout_seconds
        self.shutdown = ChannelStop("discord", self.shutdown_timeout, on_begin=self._stop_taking)
        self.ready = threading.Event()  # the gateway's READY came, the replay started
        self.stopped = threading.Event()
        self.storage = StorageOutage("discord")
        self.queues = ChatQueues("discord", lambda: pool_size(runtime.settings), lambda: max_pending(runtime.settings))
        self.tasks = ChatTasks(self.queues, "discord")
        self.job_clock: Callable[[], datetime] | None = None  # a test's clock for the jobs (None: the real one)
        self.owner_dm = ""  # the owner's DM channel: jobs, reminders and notices go there
        self._config: tuple[Settings, DiscordConfig] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._jobs_running: set[str] = set()
        self.inbox: Inbox
        self.channel: DiscordChannel
        self.turns: TurnRunner

    @property
    def config(self) -> DiscordConfig:
        """The ``discord`` record of the runtime's current settings: a ``/reload`` changes the allowlist, the owner
        and streaming at once (the rest needs a restart: config/reloadable.py)."""
        current = self.runtime.settings
        if self._config is None or self._config[0] is not current:
            self._config = (current, DiscordConfig.from_settings(current))
        return self._config[1]

    def run(self) -> int:
        config = self.config
        if config.problem:
            print(f"discord: cannot start: {config.problem}", file=sys.stderr)
            return EXIT_USAGE
        if importlib.util.find_spec("discord") is None:
            print(
                "discord: cannot start: the Discord channel needs discord.py: pip install -e '.[discord]'",
                file=sys.stderr,
            )
            return EXIT_USAGE
        lock = take_lock(self.runtime.workspace, LOCK_FILE, "discord: another Discord bot")
        if lock is None:
            return EXIT_FAILED
        loop = asyncio.new_event_loop()
        self._loop = loop
        code = EXIT_OK
        try:
            loop.run_until_complete(self._main())
        except StartFailed as err:
            print(f"discord: cannot start: {err}", file=sys.stderr)
            code = EXIT_FAILED
        except Exception as err:  # noqa: BLE001 - one clear line, not a traceback on the owner's screen
            log.error("discord: the Discord channel stopped after an error: %s: %s", type(err).__name__, err)
            log.debug("discord: the error's traceback", exc_info=err)
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
        """Ask a running channel to stop (any thread); with ``timeout``, wait that long for it to end."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self.begin_shutdown)
            except RuntimeError:
                pass  # the loop closed meanwhile
        if timeout is not None and loop is not None:
            self.stopped.wait(timeout)

    def begin_shutdown(self, reason: str = "stop requested") -> None:
        if self._stop is not None:
            self.shutdown.begin(reason)

    def _stop_taking(self) -> None:
        if hasattr(self, "turns"):
            self.turns.stop_event.set()  # a reply waiting for Discord stops waiting
        if self._stop is not None:
            self._stop.set()

    async def _connect(self, client: discord.Client, intake: Intake) -> asyncio.Task[None]:
        """Log in, connect the gateway; the gateway's task (it ends only when the client closes or fails)."""
        import discord

        try:
            await log_in(client, self.config.bot_token)
        except discord.LoginFailure:
            raise StartFailed("Discord refused the bot token (401): copy it again from the Bot page") from None
        except (discord.HTTPException, discord.GatewayNotFound, OSError) as err:
            raise StartFailed(f"Discord cannot be reached: {type(err).__name__}") from None
        connected = asyncio.Event()

        async def on_connect() -> None:
            connected.set()

        client.on_connect = on_connect  # type: ignore[attr-defined]
        gateway = asyncio.create_task(client.connect(reconnect=True), name="discord-gateway")
        waiting = asyncio.create_task(connected.wait())
        await asyncio.wait({gateway, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if gateway.done():
            _raise_gateway_failure(gateway)
        return gateway

    async def _owner_dm(self, client: discord.Client) -> None:
        """The owner's DM (kept for the run): jobs, reminders and notices go there."""
        owner = self.config.owner
        if not owner:
            return
        try:
            dm = await call("open the owner's DM", client.http.start_private_message(int(owner)))
            self.owner_dm = str(dm["id"])
            await asyncio.to_thread(note_owner_chat, self.runtime.workspace, "discord", conversation_of(self.owner_dm))
        except (DiscordUnavailable, DeliveryError, KeyError) as err:
            log.warning("discord: the owner's DM could not be opened (%s): jobs and notices wait", err)

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        self.shutdown.loop = loop
        self.shutdown.install_signal_handlers(self.stop_signals)
        config = self.config
        self.inbox = await asyncio.to_thread(Inbox, self.runtime.workspace)
        intake = Intake(self)
        await intake.load()
        client = make_client(config.base_url, intake.take)
        self.channel = DiscordChannel(client)
        self.turns = TurnRunner(self.runtime, self.inbox, self.channel, lambda: self.config)
        self.shutdown.turns = self.turns
        gateway: asyncio.Task[None] | None = None
        try:
            gateway = await self._connect(client, intake)
            await self._owner_dm(client)
            if not config.allowed:
                log.warning(
                    "discord.allowed is empty: the bot answers no one. Add your user id: "
                    'config set discord.allowed ["80351110224678912"]'
                )
            log.info("discord: connected to the gateway as %s for %s", client.user, list(config.allowed))
            self._replay()
            channel_jobs = ChannelJobs(
                loop,
                self.inbox,
                owner_conversation=self.owner_conversation,
                start=self.start_job,
                send_reminder=self.send_reminder,
            )
            await asyncio.to_thread(job_router(self.runtime).attach, "discord", channel_jobs, self.job_clock)
            self.runtime.start_background(
                notify=lambda name, text: notify_from_thread(loop, self.send_notice, name, text)
            )
            self.ready.set()
            stopping = asyncio.create_task(self._stop.wait())
            await asyncio.wait({gateway, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if gateway.done():
                _raise_gateway_failure(gateway)
        finally:
            self.ready.set()
            await self._wind_down(client, gateway)

    async def _wind_down(self, client: discord.Client, gateway: asyncio.Task[None] | None) -> None:
        if not self.shutdown.stopping:
            self.begin_shutdown()
        await self.shutdown.finish()
        await self.tasks.cancel_waiting()
        await asyncio.to_thread(job_router(self.runtime).detach, "discord")
        await client.close()
        if gateway is not None and not gateway.done():
            gateway.cancel()
        # What discord.py left running (its wait for the guilds after READY): ended before the loop closes.
        left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)

    def _replay(self) -> None:
        """Answer what the last run left in the inbox: job runs and notices, then messages oldest first."""
        items = self.inbox.pending(PREFIX)
        answered = answered_by_recorded(items)  # joined a turn whose reply was recorded: completed with it
        items = [i for i in items if i.item_id not in answered]
        later = [i for i in items if not (is_job_item(i) or NOTICE_KEY in i.payload)]
        if later:
            log.info("discord: answering %d message(s) left unanswered by the last run", len(later))
        for item in [i for i in items if i not in later] + later:
            self.tasks.spawn(item.conversation_id, self.turns.answer(item), owner=True, exempt=True)

    # -- jobs, reminders, notices -------------------------------------------------------

    def owner_conversation(self, job: Job) -> str | None:
        return conversation_of(self.owner_dm) if self.owner_dm else None

    def start_job(self, item: InboxItem) -> None:
        """Answer a job run's item in the owner's queue (first, never refused; once while it runs)."""
        if item.item_id in self._jobs_running:
            return
        self._jobs_running.add(item.item_id)

        async def run() -> None:
            try:
                await self.turns.answer(item)
            finally:
                self._jobs_running.discard(item.item_id)

        self.tasks.spawn(item.conversation_id, run(), owner=True, exempt=True)

    async def send_reminder(self, chat_id: object, text: str, conversation: object) -> bool:
        """A reminder to its ``dc:`` conversation: True when it arrived, False to try later."""
        try:
            await self.channel.send_text(address_of(str(chat_id)), TextOut(text))
            return True
        except DeliveryError as err:
            raise DeliveryRefused(f"Discord refused it: {err}") from err
        except DiscordUnavailable as err:
            log.info("discord: reminder to %s cannot be sent for now: %s", chat_id, err)
            return False

    async def send_notice(self, text: str) -> bool:
        """A notice to the owner's DM, through the inbox and the ledger like a reply: it goes out once."""
        if not self.owner_dm:
            log.warning("discord: a notice for the owner is not sent: no owner DM (discord.allowed empty or refused)")
            return False
        chat = conversation_of(self.owner_dm)
        item = await asyncio.to_thread(self.inbox.accept, f"{NOTICE_KEY}:{uuid.uuid4().hex}", chat, {NOTICE_KEY: True})
        if item is None:
            return False
        await asyncio.to_thread(self.inbox.record_reply, item.item_id, text)
        stored = self.inbox.get(item.item_id) or item
        self.tasks.spawn(chat, self.turns.answer(stored), owner=True, exempt=True)
        return True

    def notify_from_thread(self, collector_name: str, text: str) -> None:
        """A collector's notice for the owner, from the collector's thread."""
        assert self._loop is not None
        notify_from_thread(self._loop, self.send_notice, collector_name, text)


def _raise_gateway_failure(gateway: asyncio.Task[None]) -> None:
    """The gateway's task ended on its own: why, as the sentence for the owner."""
    import discord

    err = gateway.exception()
    if isinstance(err, discord.PrivilegedIntentsRequired):
        raise StartFailed(INTENTS_HELP)
    if isinstance(err, discord.ConnectionClosed):
        raise StartFailed(f"the gateway closed the connection ({err.code}: {err.reason})")
    if err is not None:
        raise err
    raise StartFailed("the gateway connection ended")
