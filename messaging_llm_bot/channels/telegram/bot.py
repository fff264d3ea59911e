"""The Telegram bot, assembled: builds the PTB Application from the frontend's parts and runs it as a channel on
an event loop of its own (conversation/service.py: the lock, the stop, the turns' deadline, the job scheduler).

Start-up: a lock file in the workspace (one bot per workspace), getMe, replay of inbox items a crash
left unanswered, then long polling (or the webhook). Once the first getUpdates is on its way, the rest starts
beside it: the skill and collector plugins load (a message that arrives first waits for them), setMyCommands,
reminders and the morning digest, collectors and memory upkeep in the background. A 409 Conflict (another
instance polls the same token) stops the bot with a clear message and exit code 1.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
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
from messaging_llm_bot.channels.telegram.updates import ChatOrderedProcessor, InboxBot
from messaging_llm_bot.channels.telegram.webhook import webhook_secret
from messaging_llm_bot.conversation.commands import COMMANDS
from messaging_llm_bot.conversation.reminders import POLL_SECONDS
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.service import ChannelService

log = logging.getLogger(__name__)

POLL_TIMEOUT_SECONDS = 10
#: Seconds a Bot API call may take to answer (PTB's default, named so a test can shorten it).
API_READ_TIMEOUT_SECONDS = 5.0
#: Start-up asks getMe this often when it times out, and PTB's bootstrap (deleteWebhook) this often when it
#: fails: a slow network or a loaded machine answers late, and giving up at the first timeout ended the bot
#: with exit 1. A refused connection at getMe still fails at once.
START_ATTEMPTS = 3
ALLOWED_UPDATES = ["message", "callback_query"]


class TelegramService(ChannelService):
    """One running bot: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is thread-safe."""

    NAME, TITLE = "telegram", "the Telegram bot"
    LOCK_FILE, LOCK_WHO = "state/bot.lock", "telegram: another bot"

    def __init__(
        self,
        runtime: Runtime,
        *,
        stop_signals: Sequence[int] | None = None,
        poll_timeout: int = POLL_TIMEOUT_SECONDS,
        manage_runtime: bool = True,
        reminder_poll_seconds: float = POLL_SECONDS,
    ) -> None:
        super().__init__(
            runtime,
            stop_signals=stop_signals,
            manage_runtime=manage_runtime,
            reminder_poll_seconds=reminder_poll_seconds,
        )
        self.settings = runtime.settings.telegram  # as at start (token, mode, digest)
        self.poll_timeout = poll_timeout
        self.frontend: Frontend | None = None
        self.app: Application | None = None
        self.conflict: str | None = None
        self.started = threading.Event()  # the deferred start (plugins, commands, jobs) is done too
        self._rest: asyncio.Task[Any] | None = None
        self.notices = self.owner_notices(
            lambda chat, text, conversation: send_to(self.app.bot, chat, text, conversation),
            lambda: None if self.frontend.settings.owner is None else str(self.frontend.settings.owner),
        )

    def problem(self) -> str | None:
        return None if self.settings.token else "telegram: no bot token: set telegram.token or TELEGRAM_BOT_TOKEN"

    def known_error(self, err: Exception) -> str | None:
        if isinstance(err, InvalidToken):
            return "telegram: the bot token was refused by the Bot API (check telegram.token)"
        if isinstance(err, Conflict):  # raised by ``close`` after a 409 stopped the bot (exit code 1)
            return (
                "telegram: stopped: another instance is polling with the same bot token (409 Conflict); run only one "
                "bot per token"
            )
        if isinstance(err, NetworkError):
            return f"telegram: cannot reach the Bot API at {api_urls(self.settings)[0]}: {err}"
        return None

    # -- building ---------------------------------------------------------------

    def build(self) -> Application:
        """Build the Application pointed at ``telegram.base_url`` with its rate limiter."""
        self.frontend = Frontend(self, Inbox(self.runtime.workspace))
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
            on_updates=self.frontend.intake.fetched,
            on_poll=self.frontend.intake.confirmable,
            on_first_poll=self._start_the_rest,
        )
        app = ApplicationBuilder().bot(bot).concurrent_updates(ChatOrderedProcessor(self.frontend)).build()
        self.frontend.register(app)
        app.add_error_handler(self._on_error)
        self.app = app
        self.shutdown.turns = self.frontend.turns
        return app

    # -- running ------------------------------------------------------------------

    async def serve(self) -> None:
        """getMe, the replay, then updates taken (polling or the webhook); PTB's own run_polling would answer
        every queued update at a stop and has no stop of its own while it starts."""
        app = self.build()
        await self._initialize(app)
        assert self.frontend is not None and app.updater is not None
        ids = sorted(self.settings.allowed_user_ids)
        log.info("Serving @%s for user ids %s", app.bot.username, ids)
        how = "Send it a message to see your numeric user id, then add it with"
        self.warn_if_no_one_allowed(ids, "telegram.allowed_user_ids", how, "[ID]")
        self.frontend.intake.start_replay()
        retries = START_ATTEMPTS - 1  # deleteWebhook/setWebhook: the server answered getMe
        if self.settings.mode == "webhook":
            hook = self.settings.webhook
            # Never without a secret: a forged POST would otherwise run as any user it names.
            secret = webhook_secret(hook.secret_token or None, self.runtime.workspace)
            await app.updater.start_webhook(
                listen=hook.listen,
                port=hook.port,
                url_path="telegram",
                webhook_url=hook.url or None,
                secret_token=secret,
                allowed_updates=ALLOWED_UPDATES,
                bootstrap_retries=retries,
            )
            asyncio.get_running_loop().call_soon(self._start_the_rest)
        else:

            def polling_failed(exc: TelegramError) -> None:  # a 409 Conflict among them: _on_error stops the bot
                app.create_task(app.process_error(error=exc, update=None))

            await app.updater.start_polling(
                poll_interval=0.0,
                timeout=self.poll_timeout,
                allowed_updates=ALLOWED_UPDATES,
                bootstrap_retries=retries,
                error_callback=polling_failed,
            )
        await app.start()

    async def _initialize(self, app: Application) -> None:
        """getMe, asked again after a timeout (PTB's retries would also retry a refused connection or a wrong
        base_url for as long)."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                await app.initialize()
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

    def _start_the_rest(self) -> None:
        if not self.stopping and self._loop is not None:
            self._rest = self._loop.create_task(self._after_start())

    async def _after_start(self) -> None:
        """What the first poll does not need: plugins, commands menu, reminders, digest, background work."""
        app, fe = self.app, self.frontend
        assert app is not None and fe is not None
        await asyncio.to_thread(self.runtime.warm_up)
        try:
            await app.bot.set_my_commands([BotCommand(name, desc) for name, desc in COMMANDS])
        except TelegramError as err:
            log.warning("telegram: setMyCommands failed: %s", err)
        if self.stopping:
            return
        loop, owner = asyncio.get_running_loop(), fe.settings.owner
        await self.join_jobs_sending(
            self.notices,
            fe.intake.shared.inbox,
            owner_conversation=fe.intake.job_conversation,
            start=fe.intake.shared.start_job,
            morning_digest=self.settings.morning_digest,
            # A served client's `ask` call, with approve_in_chat, is asked in the owner's chat (docs/serve.md).
            ask_owner=None if owner is None else fe.approvals.approver(app.bot, owner, loop),
        )
        self.started.set()

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        err = context.error
        if isinstance(err, Conflict):
            self.conflict = str(err)
            log.error("telegram: another instance is using this bot token (%s); stopping", err)
            self.begin_shutdown("409 Conflict")
            return
        log.error("telegram: error while handling an update: %s", err, exc_info=err)

    async def stop_taking(self) -> None:
        """No more updates: the poll (or webhook) ends, PTB's update handlers are waited for, and a deferred
        start not finished starts nothing more."""
        app = self.app
        if app is not None and app.updater is not None and app.updater.running:
            await app.updater.stop()
        if app is not None and app.running:
            await app.stop()
        if self._rest is not None and not self._rest.done():
            self._rest.cancel()
            await asyncio.gather(self._rest, return_exceptions=True)

    async def close(self) -> None:
        """PTB's application shut down; after a 409 Conflict the run ends as failed, saying why (``known_error``)."""
        if self.app is not None:
            await self.app.shutdown()
        if self.conflict is not None:
            raise Conflict(self.conflict)
