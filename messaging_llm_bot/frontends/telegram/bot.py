"""The Telegram bot: builds the PTB Application, starts it (polling or webhook) and stops it cleanly.

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
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from datetime import time as dtime
from typing import Any
from zoneinfo import ZoneInfo

import filelock
from telegram import BotCommand, Update
from telegram.error import Conflict, InvalidToken, NetworkError, TelegramError
from telegram.ext import Application, ApplicationBuilder, BaseUpdateProcessor, ContextTypes, ExtBot
from telegram.request import HTTPXRequest

from assistant_framework.inbox import Inbox
from assistant_framework.stores.reminders import ReminderStore
from messaging_llm_bot.frontends.commands import COMMANDS, collector_notice
from messaging_llm_bot.frontends.job_runs import JobScheduler
from messaging_llm_bot.frontends.jobs import DailyJob
from messaging_llm_bot.frontends.reminders import DeliveryRefused, ReminderScheduler
from messaging_llm_bot.frontends.runtime import Runtime
from messaging_llm_bot.frontends.telegram.handlers import Frontend
from messaging_llm_bot.frontends.telegram.ratelimit import ReplyFirstRateLimiter
from messaging_llm_bot.frontends.telegram.send import TelegramDeliveryError, refused_for_good, send_markdown
from messaging_llm_bot.frontends.telegram.settings import TelegramSettings, command_name, telegram_chat_id
from messaging_llm_bot.frontends.telegram.webhook import webhook_secret

log = logging.getLogger(__name__)

LOCK_FILE = "state/bot.lock"
POLL_TIMEOUT_SECONDS = 10
REMINDER_POLL_SECONDS = 30.0
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: PTB's own limit on updates in progress; the chat queues are the bound (see ChatOrderedProcessor).
UNBOUNDED_UPDATES = 1 << 20


class InboxBot(ExtBot):
    """ExtBot whose getUpdates persists model-bound updates before they are confirmed (next offset), and
    returns (so confirms) only those the inbox could store (``Frontend.take``)."""

    def __init__(self, *args: Any, on_updates: Any = None, on_first_poll: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        with self._unfrozen():
            self._on_updates = on_updates
            self._on_first_poll = on_first_poll

    async def get_updates(self, *args: Any, **kwargs: Any) -> tuple[Update, ...]:
        if self._on_first_poll is not None:
            callback = self._on_first_poll
            with self._unfrozen():
                self._on_first_poll = None
            # Runs once this task waits for the network: the first poll goes out before the rest starts.
            asyncio.get_running_loop().call_soon(callback)
        updates = await super().get_updates(*args, **kwargs)
        if updates and self._on_updates is not None:
            # Only what the inbox holds is returned, so confirmed: the rest (the inbox cannot store it)
            # comes again with the next call, whose offset stays below it.
            return tuple(await self._on_updates(updates, self))
        return updates


class ChatOrderedProcessor(BaseUpdateProcessor):
    """Concurrent across chats, strictly in arrival order within one chat, through the frontend's chat
    queues (frontends/chatqueue.py): a bound per chat, the owner's turns first, one slot kept for them."""

    def __init__(self, frontend: Frontend) -> None:
        # The chat queues bound the work, not PTB's semaphore: with 256 places, one chat's backlog held
        # them all (each waiting for its chat) and every other chat's updates waited behind it.
        super().__init__(UNBOUNDED_UPDATES)
        self.frontend = frontend

    async def do_process_update(self, update: object, coroutine: Any) -> None:
        if not isinstance(update, Update):
            await coroutine
            return
        chat = update.effective_chat
        # Button presses skip the queue: a turn may be waiting for one (confirmations); so does /stop,
        # which is about the turn the queue is waiting for; and what the gate drops at once, taking no
        # place in a chat's queue: a stranger's update, an update delivered again (answered already).
        if (
            chat is None
            or update.callback_query is not None
            or (update.message is not None and command_name(update.message) == "stop")
            or not self.frontend.allowed(update.effective_user)
            or update.update_id in self.frontend.duplicates
        ):
            await coroutine
            return
        fe = self.frontend
        # Admitted in arrival order (PTB starts these tasks in that order): order holds per chat.
        job = fe.queues.admit(chat.id, owner=fe.from_owner(update))
        if job is None:
            coroutine.close()
            await fe.over_limit(update, update.get_bot())
            return
        await fe.queues.run(job, coroutine)

    async def initialize(self) -> None:
        """Nothing to set up."""

    async def shutdown(self) -> None:
        """Nothing to free."""


class TelegramService:
    """One running bot: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is thread-safe."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        stop_signals: Any = None,
        poll_timeout: int = POLL_TIMEOUT_SECONDS,
        reminder_poll_seconds: float = REMINDER_POLL_SECONDS,
    ) -> None:
        self.runtime = runtime
        self.settings = TelegramSettings.from_settings(runtime.settings)  # as at start (token, mode, digest)
        self.stop_signals = stop_signals
        self.poll_timeout = poll_timeout
        self.reminder_poll_seconds = reminder_poll_seconds
        self.reminders: ReminderScheduler | None = None
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
        self._replay: asyncio.Future | None = None
        self._rest: asyncio.Task | None = None
        self.shutdown_timeout = runtime.settings.runtime.shutdown_timeout_seconds
        self._stopping = False
        self._deadline = 0.0
        self._watchdog: asyncio.TimerHandle | None = None

    # -- building ---------------------------------------------------------------

    def build(self) -> Application:
        """Build the Application pointed at ``telegram.base_url`` with rate limiter and JobQueue."""
        self.frontend = Frontend(self.runtime, Inbox(self.runtime.workspace))
        bot = InboxBot(
            token=self.settings.token,
            base_url=self.settings.base_url,
            base_file_url=self.settings.base_file_url,
            request=HTTPXRequest(connection_pool_size=64),
            get_updates_request=HTTPXRequest(read_timeout=self.poll_timeout + 10.0),
            rate_limiter=ReplyFirstRateLimiter(),
            on_updates=self.frontend.take,
            on_first_poll=self._start_the_rest,
        )
        app = (
            ApplicationBuilder()
            .bot(bot)
            .concurrent_updates(ChatOrderedProcessor(self.frontend))
            .post_init(self._post_init)
            .post_stop(self._post_stop)
            .build()
        )
        self.frontend.register(app)
        app.add_error_handler(self._on_error)
        self.app = app
        return app

    async def _post_init(self, app: Application) -> None:
        self._loop = asyncio.get_running_loop()
        bot, fe = app.bot, self.frontend
        ids = sorted(self.settings.allowed_user_ids)
        log.info("Serving @%s for user ids %s", bot.username, ids)
        if not ids:
            log.warning(
                "telegram.allowed_user_ids is empty: the bot answers no one. Send it a message to "
                "see your numeric user id, then add it with: config set telegram.allowed_user_ids [ID]"
            )
        self._replay = await fe.start_replay(bot)
        if self.settings.mode == "webhook":
            self._loop.call_soon(self._start_the_rest)
        self.ready.set()

    def _start_the_rest(self) -> None:
        if not self._stopping:
            self._rest = self._loop.create_task(self._after_start())

    async def _after_start(self) -> None:
        """What the first poll does not need: plugins, commands menu, reminders, digest, background work."""
        app = self.app
        await asyncio.to_thread(self.runtime.warm_up)
        try:
            await app.bot.set_my_commands([BotCommand(name, desc) for name, desc in COMMANDS])
        except TelegramError as err:
            log.warning("telegram: setMyCommands failed: %s", err)
        if self._stopping:
            return
        self.reminders = ReminderScheduler(
            ReminderStore(self.runtime.workspace),
            app.job_queue,
            self.send_reminder,
            default_tz=self.settings.timezone,
            poll_seconds=self.reminder_poll_seconds,
            channel="telegram",
        )
        self.reminders.start()
        fe = self.frontend
        self.jobs = JobScheduler(
            self.runtime.workspace,
            fe.inbox,
            app.job_queue,
            claim=fe.claim_job,
            start=lambda item: fe.start_job_item(app.bot, item),
            settings=lambda: self.runtime.settings,
            clock=self.job_clock,
            prefix="tg:",
        )
        self.jobs.start()
        if self.settings.morning_digest:
            hour, minute = (int(x) for x in self.settings.morning_digest.split(":"))
            # Not PTB's run_daily: its cron trigger sends a time in the hour the clocks go back twice.
            DailyJob(
                app.job_queue,
                self._morning_digest,
                dtime(hour, minute, tzinfo=ZoneInfo(self.settings.timezone)),
                "morning-digest",
            ).start()
        self.runtime.start_background(notify=self.notify_from_thread)
        self.started.set()

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        err = context.error
        if isinstance(err, Conflict):
            self.conflict = str(err)
            log.error("telegram: another instance is using this bot token (%s); stopping", err)
            self.begin_shutdown()
            return
        log.error("telegram: error while handling an update: %s", err, exc_info=err)

    # -- graceful shutdown ------------------------------------------------------------

    def _install_signal_handlers(self) -> None:
        # Our own handlers instead of PTB's: PTB's stop would answer every queued update, unbounded.
        for sig in self.stop_signals or ():
            try:
                self._loop.add_signal_handler(sig, self.begin_shutdown, signal.Signals(sig).name)
            except (NotImplementedError, RuntimeError, ValueError) as err:  # not the main thread / platform
                log.warning("telegram: cannot handle signal %s (%s); stop with stop()", sig, err)

    def begin_shutdown(self, reason: str = "stop requested") -> None:
        """Stop taking new messages, give running turns ``shutdown_timeout`` seconds, then stop (loop thread)."""
        if self._stopping:  # a second Ctrl-C / SIGTERM: do not wait any longer
            self._give_up()
            return
        self._stopping = True
        if self.frontend is not None:
            self.frontend.turns.stopping = True
            running = self.frontend.turns.active
        else:
            running = 0
        log.info(
            "telegram: %s: stopping; waiting up to %.0f s for %d turn(s) in flight; messages not yet "
            "answered stay in the inbox",
            reason,
            self.shutdown_timeout,
            running,
        )
        loop = self._loop or asyncio.get_event_loop()
        self._deadline = loop.time() + self.shutdown_timeout
        self._watchdog = loop.call_later(self.shutdown_timeout, self._give_up)
        if self.app is not None:
            self._stop_app()

    def _stop_app(self, tries: int = 0) -> None:
        """PTB's stop_running(), made to stick while the application is still starting: after post_init
        it only sets a marker PTB has already checked, so a SIGTERM right after start-up was lost and the
        bot never stopped. Until the application runs, ask again; once it runs, give its start() a moment
        to return into run_forever first (stopping the loop under start() would break it), as ``stop()``."""
        app = self.app
        if app.running:
            if tries:
                self._loop.call_later(0.1, app.stop_running)
            else:
                app.stop_running()
            return
        app.stop_running()  # still in post_init: the marker PTB checks right after it
        if tries < 400 and not self._loop.is_closed():  # 20 s: PTB gave up starting, or stopped already
            self._loop.call_later(0.05, self._stop_app, tries + 1)

    def _give_up(self) -> None:
        if self.frontend is None:
            return
        cancelled = self.frontend.turns.cancel_all()
        if cancelled:
            log.warning(
                "telegram: %d turn(s) did not finish within %.0f s; their messages stay in the inbox "
                "and are answered at the next start",
                cancelled,
                self.shutdown_timeout,
            )

    async def _post_stop(self, app: Application) -> None:
        if self.jobs is not None:
            self.jobs.stop()
        if self._rest is not None and not self._rest.done():
            self._rest.cancel()  # stopped before the deferred start finished: start nothing more
            await asyncio.gather(self._rest, return_exceptions=True)
        # PTB's stop waited for update handlers; start-up replay turns run outside PTB: wait for them too.
        if self.frontend is not None:
            left = max(0.0, self._deadline - asyncio.get_running_loop().time()) if self._stopping else 0.0
            if not await self.frontend.turns.wait_idle(left):
                self._give_up()
                await self.frontend.turns.wait_idle(1.0)
        if self.frontend is not None:
            self.frontend.turns.pool.shutdown()
        if self._watchdog is not None:
            self._watchdog.cancel()

    # -- outgoing notices ---------------------------------------------------------

    async def send_notice(self, chat_id: int | str | None, text: str) -> bool:
        """Send plain text to one chat, or (no chat) to the owner's private chat; True if all arrived."""
        owner = self.frontend.settings.owner_id
        # Collector notices and the digest are the owner's data: never to the other allowed users.
        targets = [telegram_chat_id(chat_id)] if chat_id not in (None, "") else ([owner] if owner is not None else [])
        ok = bool(targets)
        for target in targets:
            try:
                await send_markdown(self.app.bot, target, text)
            except TelegramError as err:
                log.warning("telegram: notice to chat %s failed: %s", target, err)
                ok = False
            except Exception as err:  # noqa: BLE001 - TelegramDeliveryError and friends
                log.warning("telegram: notice to chat %s failed: %s", target, err)
                ok = False
        return ok

    async def send_reminder(self, chat_id: int | str | None, text: str) -> bool:
        """Send a reminder to its chat: True when it arrived, False to try again later (network, 429, 5xx);
        DeliveryRefused when Telegram refused it for good (the user blocked the bot, chat not found)."""
        try:
            target = telegram_chat_id(chat_id)
        except ValueError:
            raise DeliveryRefused(f"{chat_id!r} is not a Telegram chat id") from None
        try:
            await send_markdown(self.app.bot, target, text)
            return True
        except TelegramDeliveryError as err:
            if refused_for_good(err):
                raise DeliveryRefused(f"Telegram refused it: {err.cause}") from err
            # The scheduler warns once per reminder; each retry's cause goes to the log at INFO.
            log.info("telegram: reminder to chat %s failed: %s", chat_id, err)
            return False

    def notify_from_thread(self, collector_name: str, text: str) -> None:
        """Collector callback (background thread): a short notice to the allowed users."""
        if self._loop is None or self._loop.is_closed():
            return
        notice = self.send_notice(None, collector_notice(collector_name, text))
        try:
            asyncio.run_coroutine_threadsafe(notice, self._loop)
        except RuntimeError:  # closed meanwhile: the bot is stopping
            notice.close()

    async def _morning_digest(self, context: ContextTypes.DEFAULT_TYPE) -> None:
        await self.send_notice(None, await asyncio.to_thread(self.frontend.digest_text))

    # -- running ------------------------------------------------------------------

    def run(self) -> int:
        """Run until stopped; returns the process exit code."""
        if not self.settings.token:
            print("telegram: no bot token: set telegram.token or TELEGRAM_BOT_TOKEN", file=sys.stderr)
            return EXIT_USAGE
        lock = filelock.FileLock(str(self.runtime.workspace.path(LOCK_FILE)), mode=0o600)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            print(
                f"telegram: another bot is already running on workspace {self.runtime.workspace.root} "
                f"({LOCK_FILE} is held); stop it first",
                file=sys.stderr,
            )
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
        self._install_signal_handlers()
        try:
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
                    allowed_updates=["message", "callback_query"],
                    stop_signals=None,
                    close_loop=False,
                )
            else:
                app.run_polling(
                    poll_interval=0.0,
                    timeout=self.poll_timeout,
                    allowed_updates=["message", "callback_query"],
                    stop_signals=None,
                    close_loop=False,
                )
        except InvalidToken:
            print("telegram: the bot token was refused by the Bot API (check telegram.token)", file=sys.stderr)
            return EXIT_FAILED
        except NetworkError as err:
            print(f"telegram: cannot reach the Bot API at {self.settings.base_url}: {err}", file=sys.stderr)
            return EXIT_FAILED
        finally:
            self._shutdown_runtime()
            self._close_loop()
        if self.conflict:
            print(
                "telegram: stopped: another instance is polling with the same bot token "
                "(409 Conflict); run only one bot per token",
                file=sys.stderr,
            )
            return EXIT_FAILED
        return EXIT_OK

    def _shutdown_runtime(self) -> None:
        try:
            self.runtime.shutdown(self.shutdown_timeout)
        except Exception as err:  # noqa: BLE001 - shutting down: report, do not mask the exit code
            log.warning("runtime shutdown failed: %s", err)

    def _close_loop(self) -> None:
        """Close the loop PTB ran on once the runtime is down (``close_loop=False`` kept it for that):
        left open, its selector and self-pipe leak with every run of the bot in one process."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        asyncio.set_event_loop(None)

    def stop(self, timeout: float = 10.0) -> None:
        """Ask a running bot to stop (from another thread, e.g. a test or a supervisor)."""
        loop, app = self._loop, self.app
        if loop is None or app is None:
            return
        # stop_running() before the application runs only sets a marker PTB checks right after
        # post_init; wait until it runs so the request is not lost.
        deadline = time.monotonic() + timeout
        while not app.running and time.monotonic() < deadline and not loop.is_closed():
            time.sleep(0.02)
        time.sleep(0.1)  # let run_polling move from start() into run_forever()
        try:
            loop.call_soon_threadsafe(self.begin_shutdown)
        except RuntimeError:  # the loop is closed: the bot has stopped already
            pass


def run_telegram(runtime: Runtime, stop_signals: Sequence[int] | None = (signal.SIGINT, signal.SIGTERM)) -> int:
    """Run the Telegram frontend for ``runtime`` until interrupted; returns an exit code."""
    return TelegramService(runtime, stop_signals=stop_signals).run()
