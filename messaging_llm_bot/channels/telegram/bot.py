"""The Telegram bot, assembled: builds the PTB Application from the frontend's parts, starts it (polling or
webhook) and stops it cleanly (telegram/shutdown.py).

Start-up: a lock file in the workspace (one bot per workspace), getMe, replay of inbox items a crash
left unanswered, then long polling. Once the first getUpdates is on its way, the rest starts beside
it: the skill and collector plugins load (a message that arrives first waits for them), setMyCommands,
reminders and the morning digest on the JobQueue, collectors and memory upkeep in the background.
A 409 Conflict (another instance polls the same token) stops the
bot with a clear message and exit code 1.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from telegram import BotCommand
from telegram.error import Conflict, InvalidToken, NetworkError, TelegramError, TimedOut
from telegram.ext import Application, ApplicationBuilder, ContextTypes
from telegram.request import HTTPXRequest

from assistant_framework.inbox import Inbox
from assistant_framework.tls import shared_context
from messaging_llm_bot.channels.telegram.frontend import Frontend
from messaging_llm_bot.channels.telegram.ratelimit import ReplyFirstRateLimiter
from messaging_llm_bot.channels.telegram.send import send_to
from messaging_llm_bot.channels.telegram.settings import api_urls
from messaging_llm_bot.channels.telegram.shutdown import GracefulStop, StoppableApplication
from messaging_llm_bot.channels.telegram.updates import ChatOrderedProcessor, InboxBot
from messaging_llm_bot.channels.telegram.webhook import webhook_secret
from messaging_llm_bot.conversation.commands import COMMANDS
from messaging_llm_bot.conversation.job_router import ChannelJobs, job_router, owner_digest
from messaging_llm_bot.conversation.job_scheduler import JobScheduler
from messaging_llm_bot.conversation.notices import ChannelNotices, digest_now
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import close_loop, request_stop, shutdown_runtime, take_lock

log = logging.getLogger(__name__)

LOCK_FILE = "state/bot.lock"
POLL_TIMEOUT_SECONDS = 10
REMINDER_POLL_SECONDS = 30.0
#: Seconds a Bot API call may take to answer (PTB's default, named so a test can shorten it).
API_READ_TIMEOUT_SECONDS = 5.0
#: Start-up asks getMe this often when it times out, and PTB's bootstrap (deleteWebhook) this often when it
#: fails: a slow network or a loaded machine answers late, and giving up at the first timeout ended the bot
#: with exit 1. A refused connection at getMe still fails at once.
START_ATTEMPTS = 3
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
ALLOWED_UPDATES = ["message", "callback_query"]


class TelegramService:
    """One running bot: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is thread-safe."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        stop_signals: Sequence[int] | None = None,
        poll_timeout: int = POLL_TIMEOUT_SECONDS,
        reminder_poll_seconds: float = REMINDER_POLL_SECONDS,
        manage_runtime: bool = True,
    ) -> None:
        self.runtime = runtime
        self.manage_runtime = manage_runtime  # False when another channel shuts the runtime down
        self.settings = runtime.settings.telegram  # as at start (token, mode, digest)
        self.stop_signals = stop_signals
        self.poll_timeout = poll_timeout
        self.reminder_poll_seconds = reminder_poll_seconds
        self.jobs: JobScheduler | None = None
        #: The jobs' clock (a test's controlled clock; None: the real one).
        self.job_clock: Callable[[], datetime] | None = None
        self.frontend: Frontend | None = None
        self.app: Application | None = None
        self.conflict: str | None = None
        #: Set when updates are taken (post_init done); ``started`` once the deferred start is done too.
        self.ready = threading.Event()
        self.started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._rest: asyncio.Task[Any] | None = None
        self.shutdown_timeout = runtime.settings.runtime.shutdown_timeout_seconds
        self.shutdown = GracefulStop(self.shutdown_timeout)
        self.notices = ChannelNotices(
            "telegram",
            lambda chat, text, conversation: send_to(self.app.bot, chat, text, conversation),
            lambda: None if self.frontend.settings.owner is None else str(self.frontend.settings.owner),
            lambda: self._loop,
            lambda: digest_now(self.runtime.workspace, self.runtime.settings.runtime.timezone),
        )

    # -- building ---------------------------------------------------------------

    def build(self) -> Application:
        """Build the Application pointed at ``telegram.base_url`` with rate limiter and JobQueue."""
        self.frontend = Frontend(self.runtime, Inbox(self.runtime.workspace))
        bot = InboxBot(
            token=self.settings.token,
            base_url=api_urls(self.settings)[0],
            base_file_url=api_urls(self.settings)[1],
            request=HTTPXRequest(
                connection_pool_size=64,
                read_timeout=API_READ_TIMEOUT_SECONDS,
                httpx_kwargs={"verify": shared_context()},
            ),
            get_updates_request=HTTPXRequest(
                read_timeout=self.poll_timeout + 10.0, httpx_kwargs={"verify": shared_context()}
            ),
            rate_limiter=ReplyFirstRateLimiter(),
            on_updates=self.frontend.intake.take,
            on_first_poll=self._start_the_rest,
        )
        app = (
            ApplicationBuilder()
            .application_class(StoppableApplication)
            .bot(bot)
            .concurrent_updates(ChatOrderedProcessor(self.frontend))
            .post_init(self._post_init)
            .post_stop(self._post_stop)
            .build()
        )
        self.frontend.register(app)
        app.add_error_handler(self._on_error)
        self.app = self.shutdown.app = app
        self.shutdown.turns = self.frontend.turns
        return app

    async def _post_init(self, app: Application) -> None:
        self._loop = self.shutdown.loop = asyncio.get_running_loop()
        bot, fe = app.bot, self.frontend
        ids = sorted(self.settings.allowed_user_ids)
        log.info("Serving @%s for user ids %s", bot.username, ids)
        if not ids:
            log.warning(
                "telegram.allowed_user_ids is empty: the bot answers no one. Send it a message to "
                "see your numeric user id, then add it with: config set telegram.allowed_user_ids [ID]"
            )
        fe.intake.start_replay(bot)
        if self.settings.mode == "webhook":
            self._loop.call_soon(self._start_the_rest)
        self.ready.set()

    def _start_the_rest(self) -> None:
        if not self.shutdown.stopping:
            self._rest = self._loop.create_task(self._after_start())

    async def _after_start(self) -> None:
        """What the first poll does not need: plugins, commands menu, reminders, digest, background work."""
        app = self.app
        await asyncio.to_thread(self.runtime.warm_up)
        try:
            await app.bot.set_my_commands([BotCommand(name, desc) for name, desc in COMMANDS])
        except TelegramError as err:
            log.warning("telegram: setMyCommands failed: %s", err)
        if self.shutdown.stopping:
            return
        fe = self.frontend
        channel_jobs = ChannelJobs(
            asyncio.get_running_loop(),
            fe.intake.inbox,
            owner_conversation=fe.intake.job_conversation,
            start=fe.intake.start_job_item,
            send_reminder=self.notices.send_reminder,
            digest=owner_digest(
                self.settings.morning_digest, self.runtime.settings.runtime.timezone, self.notices.morning_digest
            ),
            reminder_poll_seconds=self.reminder_poll_seconds,
            # A served client's `ask` call, with approve_in_chat, is asked in the owner's chat (docs/serve.md).
            ask_owner=None
            if fe.settings.owner is None
            else fe.approvals.approver(app.bot, fe.settings.owner, asyncio.get_running_loop()),
        )
        self.jobs = await asyncio.to_thread(job_router(self.runtime).attach, "telegram", channel_jobs, self.job_clock)
        self.runtime.start_background(notify=self.notices.notify_from_thread)
        self.started.set()

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        err = context.error
        if isinstance(err, Conflict):
            self.conflict = str(err)
            log.error("telegram: another instance is using this bot token (%s); stopping", err)
            self.shutdown.begin()
            return
        log.error("telegram: error while handling an update: %s", err, exc_info=err)

    async def _post_stop(self, app: Application) -> None:
        if self._rest is not None and not self._rest.done():
            self._rest.cancel()  # stopped before the deferred start finished: start nothing more
            await asyncio.gather(self._rest, return_exceptions=True)
        await asyncio.to_thread(job_router(self.runtime).detach, "telegram")  # no new job run starts here
        # PTB's stop waited for update handlers; start-up replay turns run outside PTB: wait for them too.
        await self.shutdown.finish_turns()

    # -- running ------------------------------------------------------------------

    def run(self) -> int:
        """Run until stopped; returns the process exit code."""
        if not self.settings.token:
            print("telegram: no bot token: set telegram.token or TELEGRAM_BOT_TOKEN", file=sys.stderr)
            return EXIT_USAGE
        lock = take_lock(self.runtime.workspace, LOCK_FILE, "telegram: another bot")
        if lock is None:
            return EXIT_FAILED
        try:
            return self._run_app()
        finally:
            lock.release()

    def _run_app(self) -> int:
        app = self.build()
        # PTB runs on the thread's current loop: create it here so signals are handled from the first moment.
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self.shutdown.loop = self._loop
        self.shutdown.install_signal_handlers(self.stop_signals)
        try:
            self._initialize(app)
            if self.settings.mode == "webhook":
                hook = self.settings.webhook
                # Never without a secret: a forged POST would otherwise run as any user it names.
                secret = webhook_secret(hook.secret_token or None, self.runtime.workspace)
                app.run_webhook(
                    listen=hook.listen,
                    port=hook.port,
                    url_path="telegram",
                    webhook_url=hook.url or None,
                    secret_token=secret,
                    allowed_updates=ALLOWED_UPDATES,
                    stop_signals=None,
                    bootstrap_retries=START_ATTEMPTS - 1,  # deleteWebhook/setWebhook: the server answered getMe
                    close_loop=False,
                )
            else:
                app.run_polling(
                    poll_interval=0.0,
                    timeout=self.poll_timeout,
                    allowed_updates=ALLOWED_UPDATES,
                    stop_signals=None,
                    bootstrap_retries=START_ATTEMPTS - 1,
                    close_loop=False,
                )
        except InvalidToken:
            print("telegram: the bot token was refused by the Bot API (check telegram.token)", file=sys.stderr)
            return EXIT_FAILED
        except NetworkError as err:
            print(f"telegram: cannot reach the Bot API at {api_urls(self.settings)[0]}: {err}", file=sys.stderr)
            return EXIT_FAILED
        finally:
            if self.manage_runtime:
                shutdown_runtime(self.runtime, self.shutdown_timeout)
            close_loop(self._loop)  # close_loop=False kept it for the runtime's shutdown
            asyncio.set_event_loop(None)
        if self.conflict:
            print(
                "telegram: stopped: another instance is polling with the same bot token "
                "(409 Conflict); run only one bot per token",
                file=sys.stderr,
            )
            return EXIT_FAILED
        return EXIT_OK

    def _initialize(self, app: Application) -> None:
        """getMe before PTB's own start-up (which then finds the app initialized), asked again after a timeout:
        PTB's retries would also retry a refused connection or a wrong base_url for as long."""
        assert self._loop is not None
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self._loop.run_until_complete(app.initialize())
                return
            except TimedOut as err:
                if attempt == START_ATTEMPTS:
                    raise
                log.warning(
                    "telegram: the Bot API did not answer in time (%s); asking again (%d of %d)",
                    err,
                    attempt + 1,
                    START_ATTEMPTS,
                )

    def stop(self, timeout: float = 10.0) -> None:
        """Ask a running bot to stop (from another thread, e.g. a test or a supervisor); returns at once
        (``timeout``: the ChannelRunner's signature; nothing here waits). From any moment on: the stop is kept
        until the application runs (StoppableApplication)."""
        if self.app is not None:
            request_stop(self._loop, self.shutdown.begin)
