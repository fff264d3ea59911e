"""The Slack channel running: the Events API's request URL listening (or Socket Mode connected), what a crash left
answered, the job
scheduler joined (job runs and reminders to the owner's DM), collectors' notices; a stop gives running turns
``shutdown_timeout_seconds`` (conversation/shutdown.py).

Start-up refuses, with one sentence and exit code 2, a config that cannot run (the token's or the signing
secret's or the app-level token's variable unset); with exit code 1 a workspace where another Slack bot runs (a
lock file), a token Slack refuses, or an address the request URL cannot listen on.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from assistant_framework.config.settings import Settings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.contract import Address, DeliveryError, TextOut
from messaging_llm_bot.channels.slack.api import SlackClient, SlackUnavailable
from messaging_llm_bot.channels.slack.channel import SlackChannel
from messaging_llm_bot.channels.slack.intake import Intake
from messaging_llm_bot.channels.slack.settings import PREFIX, SlackConfig, conversation_of
from messaging_llm_bot.channels.slack.socketmode import AppTokenRefused, SocketMode
from messaging_llm_bot.channels.slack.turn import TurnRunner, address_of
from messaging_llm_bot.channels.slack.webhook import Webhook
from messaging_llm_bot.conversation.approvals import Answer
from messaging_llm_bot.conversation.busy import answered_by_recorded
from messaging_llm_bot.conversation.chatqueue import ChatQueues, max_pending
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.held import StorageOutage
from messaging_llm_bot.conversation.item_turns import is_notice_item
from messaging_llm_bot.conversation.job_router import ChannelJobs, job_router
from messaging_llm_bot.conversation.job_runs import is_job_item
from messaging_llm_bot.conversation.notices import notify_from_thread
from messaging_llm_bot.conversation.owner_chats import note_owner_chat
from messaging_llm_bot.conversation.pool import pool_size
from messaging_llm_bot.conversation.reminders import DeliveryRefused
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import ChannelStop, shutdown_runtime, take_lock

log = logging.getLogger(__name__)

LOCK_FILE = "state/slack.lock"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class SlackService:
    """One running Slack channel: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is
    thread-safe."""

    def __init__(
        self, runtime: Runtime, *, stop_signals: Sequence[int] | None = None, manage_runtime: bool = True
    ) -> None:
        self.runtime = runtime
        self.stop_signals = stop_signals
        self.manage_runtime = manage_runtime  # False when another channel shuts the runtime down
        self.shutdown_timeout = runtime.settings.runtime.shutdown_timeout_seconds
        self.shutdown = ChannelStop("slack", self.shutdown_timeout, on_begin=self._stop_taking)
        self.ready = threading.Event()  # listening, the replay started
        self.stopped = threading.Event()
        self.storage = StorageOutage("slack")
        self.queues = ChatQueues("slack", lambda: pool_size(runtime.settings), lambda: max_pending(runtime.settings))
        self.tasks = ChatTasks(self.queues, "slack")
        self.job_clock: Callable[[], datetime] | None = None  # a test's clock for the jobs (None: the real one)
        self.webhook: Webhook | None = None
        self.socket: SocketMode | None = None  # slack.socket_mode: the events over a websocket instead
        self.bot_user = ""  # the bot's own user id (auth.test): its own messages are passed over
        self.owner_dm = ""  # the owner's DM channel (conversations.open): jobs, reminders and notices go there
        self._config: tuple[Settings, SlackConfig] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._jobs_running: set[str] = set()
        self.inbox: Inbox
        self.channel: SlackChannel
        self.turns: TurnRunner

    @property
    def config(self) -> SlackConfig:
        """The ``slack`` record of the runtime's current settings: a ``/reload`` changes the allowlist, the owner
        and streaming at once (the rest needs a restart: config/reloadable.py)."""
        current = self.runtime.settings
        if self._config is None or self._config[0] is not current:
            self._config = (current, SlackConfig.from_settings(current))
        return self._config[1]

    def run(self) -> int:
        config = self.config
        if config.problem:
            print(f"slack: cannot start: {config.problem}", file=sys.stderr)
            return EXIT_USAGE
        if importlib.util.find_spec("slack_sdk") is None:
            print("slack: cannot start: the Slack channel needs slack-sdk: pip install -e '.[slack]'", file=sys.stderr)
            return EXIT_USAGE
        lock = take_lock(self.runtime.workspace, LOCK_FILE, "slack: another Slack bot")
        if lock is None:
            return EXIT_FAILED
        loop = asyncio.new_event_loop()
        self._loop = loop
        code = EXIT_OK
        try:
            loop.run_until_complete(self._main())
        except OSError as err:
            print(f"slack: the request URL cannot listen on {config.listen}:{config.port}: {err}", file=sys.stderr)
            code = EXIT_FAILED
        except DeliveryError as err:
            print(f"slack: cannot start: Slack refused the bot token ({err})", file=sys.stderr)
            code = EXIT_FAILED
        except AppTokenRefused as err:
            print(
                f"slack: cannot start: Slack refused the app-level token, slack.app_token_env ({err})", file=sys.stderr
            )
            code = EXIT_FAILED
        except Exception as err:  # noqa: BLE001 - one clear line, not a traceback on the owner's screen
            log.error("slack: the Slack channel stopped after an error: %s: %s", type(err).__name__, err)
            log.debug("slack: the error's traceback", exc_info=err)
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
            self.turns.stop_event.set()  # a reply waiting for the Web API stops waiting
        if self._stop is not None:
            self._stop.set()

    async def _who(self, client: SlackClient) -> None:
        """The bot's user id, and the owner's DM (both kept for the run)."""
        try:
            self.bot_user = str((await client.auth_test()).get("user_id") or "")
        except SlackUnavailable as err:
            log.warning("slack: auth.test failed (%s); going on", err)
        owner = self.config.owner
        if owner:
            try:
                self.owner_dm = await client.open_dm(owner)
                await asyncio.to_thread(
                    note_owner_chat, self.runtime.workspace, "slack", conversation_of(self.owner_dm)
                )
            except (SlackUnavailable, DeliveryError) as err:
                log.warning("slack: the owner's DM could not be opened (%s): jobs and notices wait", err)

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        self.shutdown.loop = loop
        self.shutdown.install_signal_handlers(self.stop_signals)
        config = self.config
        self.inbox = await asyncio.to_thread(Inbox, self.runtime.workspace)
        client = SlackClient(config.base_url, config.bot_token)
        self.channel = SlackChannel(client)
        self.turns = TurnRunner(self.runtime, self.inbox, self.channel, lambda: self.config)
        self.shutdown.turns = self.turns
        await self._who(client)
        intake = Intake(self)
        await intake.load()
        try:
            await self._take_events(intake)
            if not config.allowed:
                log.warning(
                    "slack.allowed is empty: the bot answers no one. Add your user id: "
                    'config set slack.allowed ["U0123ABCD"]'
                )
            self._replay()
            channel_jobs = ChannelJobs(
                loop,
                self.inbox,
                owner_conversation=self.owner_conversation,
                start=self.start_job,
                send_reminder=self.send_reminder,
                ask_owner=self.channel.questions.approver(self._ask_owner, loop, "the slack owner's DM"),
            )
            await asyncio.to_thread(job_router(self.runtime).attach, "slack", channel_jobs, self.job_clock)
            self.runtime.start_background(
                notify=lambda name, text: notify_from_thread(loop, self.send_notice, name, text)
            )
            self.ready.set()
            await self._stop.wait()
        finally:
            self.ready.set()
            await self._wind_down()

    async def _take_events(self, intake: Intake) -> None:
        """Events in: Socket Mode connected, or the Events API's request URL listening."""
        config = self.config
        if config.socket_mode:
            self.socket = SocketMode(config, intake.take, intake.act)
            await self.socket.start()
            log.info("slack: taking events over Socket Mode for %s", list(config.allowed))
            return
        self.webhook = Webhook(lambda: self.config, intake.take, intake.act)
        self.webhook.start()
        log.info("slack: serving the Events API on %s for %s", self.webhook.url, list(config.allowed))

    async def _wind_down(self) -> None:
        if not self.shutdown.stopping:
            self.begin_shutdown()
        if self.webhook is not None:
            self.webhook.stop()
        if self.socket is not None:
            await self.socket.stop()  # no new events; the turns under way finish below
        await self.shutdown.finish()
        await self.tasks.cancel_waiting()
        await asyncio.to_thread(job_router(self.runtime).detach, "slack")

    def _replay(self) -> None:
        """Answer what the last run left in the inbox: job runs and notices, then messages oldest first."""
        items = self.inbox.pending(PREFIX)
        answered = answered_by_recorded(items)  # joined a turn whose reply was recorded: completed with it
        items = [i for i in items if i.item_id not in answered]
        later = [i for i in items if not (is_job_item(i) or is_notice_item(i))]
        if later:
            log.info("slack: answering %d message(s) left unanswered by the last run", len(later))
        for item in [i for i in items if i not in later] + later:
            self.tasks.spawn(item.conversation_id, self.turns.answer(item), owner=True, exempt=True)

    # -- jobs, reminders, notices -------------------------------------------------------

    async def _ask_owner(self, request: dict[str, Any]) -> Answer:
        """A served client's ``ask`` call, asked in the owner's DM (``ChannelJobs.ask_owner``); no DM: not done."""
        if not self.owner_dm:
            log.warning("slack: no owner DM to ask for confirmation in; not done")
            return False
        return await self.turns.ask(Address(self.owner_dm), request)

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
        """A reminder to its ``sl:`` conversation: True when it arrived, False to try later."""
        try:
            await self.channel.send_text(address_of(str(chat_id)), TextOut(text))
            return True
        except DeliveryError as err:
            raise DeliveryRefused(f"the Slack Web API refused it: {err}") from err
        except SlackUnavailable as err:
            log.info("slack: reminder to %s cannot be sent for now: %s", chat_id, err)
            return False

    async def send_notice(self, text: str) -> bool:
        """A notice to the owner's DM, through the inbox and the ledger like a reply: it goes out once."""
        if not self.owner_dm:
            log.warning("slack: a notice for the owner is not sent: no owner DM (slack.allowed empty or refused)")
            return False
        return await self.turns.queue_notice(self.tasks, conversation_of(self.owner_dm), text)

    def notify_from_thread(self, collector_name: str, text: str) -> None:
        """A collector's notice for the owner, from the collector's thread."""
        assert self._loop is not None
        notify_from_thread(self._loop, self.send_notice, collector_name, text)


def run_slack(runtime: Runtime, stop_signals: Sequence[int] | None = (signal.SIGINT, signal.SIGTERM)) -> int:
    """Run the Slack channel for ``runtime`` until interrupted; returns an exit code."""
    return SlackService(runtime, stop_signals=stop_signals).run()
