"""The Telegram bot, assembled: python-telegram-bot's ``ExtBot`` as the Bot API client (with our rate limiter),
our own getUpdates loop or the shared webhook listener, run as a channel (conversation/service.py).

Each update (``dispatch``): the allowlist (telegram/access.py) first; button presses at once (a turn may wait
for one); commands and the messages the model reads to the intake (telegram/intake.py); the rest in its chat's
queue. An edited message runs nothing. Start-up and the 409 stop: docs/telegram.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar, Unpack

import telegram
from telegram import BotCommand, Update
from telegram.error import Conflict, InvalidToken, NetworkError, TelegramError, TimedOut
from telegram.ext import ExtBot
from telegram.request import HTTPXRequest

from assistant_framework.config.settings.bot_api import api_urls
from assistant_framework.inbox import Inbox
from assistant_framework.tls import shared_context
from messaging_llm_bot.channels.telegram.access import Access
from messaging_llm_bot.channels.telegram.approval import CALLBACK_PATTERN as APPROVAL_PATTERN
from messaging_llm_bot.channels.telegram.approval import TelegramApprovals
from messaging_llm_bot.channels.telegram.intake import TelegramIntake
from messaging_llm_bot.channels.telegram.ratelimit import ReplyFirstRateLimiter
from messaging_llm_bot.channels.telegram.settings import chat_of, is_command
from messaging_llm_bot.channels.telegram.turn import TelegramTurns
from messaging_llm_bot.conversation.commands import COMMANDS
from messaging_llm_bot.conversation.pairing import Pairing
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.service import ChannelOptions, ChannelService

if TYPE_CHECKING:  # pragma: no cover - imported in webhook mode only (``serve``)
    from messaging_llm_bot.channels.listener import WebhookListener

log = logging.getLogger(__name__)

T = TypeVar("T")

POLL_TIMEOUT_SECONDS = 10
#: Seconds a Bot API call may take to answer (PTB's default, named so a test can shorten it).
API_READ_TIMEOUT_SECONDS = 5.0
#: Start-up asks getMe this often when it times out, and deleteWebhook/setWebhook this often when they fail:
#: a slow network or a loaded machine answers late, and giving up at the first timeout ended the bot
#: with exit 1. A refused connection at getMe still fails at once.
START_ATTEMPTS = 3
#: The pause after a poll that failed, half as long again after each failure in a row, at most the second.
POLL_BACKOFF_FIRST_SECONDS, POLL_BACKOFF_MAX_SECONDS = 1.0, 30.0
ALLOWED_UPDATES = ["message", "callback_query"]


class TelegramService(ChannelService):
    """One running bot: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is thread-safe."""

    NAME, TITLE = "telegram", "the Telegram bot"
    LOCK_FILE, LOCK_WHO = "state/bot.lock", "telegram: another bot"

    def __init__(
        self, runtime: Runtime, *, poll_timeout: int = POLL_TIMEOUT_SECONDS, **options: Unpack[ChannelOptions]
    ) -> None:
        super().__init__(runtime, **options)
        self.settings = runtime.settings.telegram  # as at start (token, mode, digest)
        self.poll_timeout = poll_timeout
        self.approvals = TelegramApprovals()
        self.access = Access(lambda: runtime.settings.telegram, Pairing(runtime))  # the current record (/reload)
        self.turns: TelegramTurns | None = None  # made with the bot (``build``)
        self.intake: TelegramIntake | None = None
        self.failure: TelegramError | None = None  # what ended the polling (a 409 Conflict, a refused token)
        self.started = threading.Event()  # the deferred start (plugins, commands, jobs) is done too
        self._offset = 0  # the next getUpdates' offset: past the updates the inbox holds
        self._poll: asyncio.Task[object] | None = None
        self._webhook: WebhookListener | None = None
        self.notices = self.owner_notices(
            lambda chat, text, conversation: self.turns.send_to(chat, text, conversation),
            lambda: None if self.access.settings.owner is None else str(self.access.settings.owner),
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
        if isinstance(err, OSError) and self._webhook is not None:  # its address taken, or not this machine's
            hook = self.settings.webhook
            return f"telegram: the webhook cannot listen on {hook.listen}:{hook.port}: {err}"
        return None

    def build(self) -> telegram.Bot:
        """The Bot API client pointed at ``telegram.base_url`` with its rate limiter, and the parts over it."""
        bot = ExtBot(
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
        )
        self.turns = TelegramTurns(self.runtime, Inbox(self.runtime.workspace), bot, self.approvals, self.access)
        # Polling: held while the inbox cannot store (unconfirmed to Telegram); a webhook's POST is refused then (503:
        # Telegram sends it again). Each chat's queue is its chat's.
        hold = self.settings.mode != "webhook"
        shared = self.channel_intake(self.turns, hold=hold, queue_of=chat_of, taken=self.turns.albums.arrived)
        self.intake = TelegramIntake(self.runtime, self.access, self.turns, shared)
        self.shutdown.turns = self.turns
        return bot

    async def serve(self) -> None:
        """getMe, the replay, then updates taken: the webhook listening, or the poll under way."""
        bot = self.build()
        await self._at_start(bot.initialize, TimedOut)
        ids = sorted(self.settings.allowed_user_ids)
        log.info("Serving @%s for user ids %s", bot.username, ids)
        how = "Send it a message to see your numeric user id, then add it with"
        self.warn_if_no_one_allowed(ids, "telegram.allowed_user_ids", how, "[ID]")
        self.intake.start_replay()
        if self.settings.mode == "webhook":
            # Here: the listener brings the web page's parts (its limits, its headers), which polling never needs.
            from messaging_llm_bot.channels.listener import WebhookListener
            from messaging_llm_bot.channels.telegram.webhook import MAX_UPDATE_BYTES, UpdateHandler, webhook_secret

            hook = self.settings.webhook
            # Never without a secret: a forged POST would otherwise run as any user it names.
            secret = webhook_secret(hook.secret_token or None, self.runtime.workspace)
            args = {"secret": secret, "bot": bot, "take": self.webhook_update}
            self._webhook = WebhookListener(hook.listen, hook.port, "/telegram", UpdateHandler, args, MAX_UPDATE_BYTES)
            self._webhook.start()
            url = hook.url or self._webhook.url
            await self._at_start(
                lambda: bot.set_webhook(url, allowed_updates=ALLOWED_UPDATES, secret_token=secret), TelegramError
            )
        else:
            await self._at_start(bot.delete_webhook, TelegramError)  # getUpdates is refused while one is set
            self._poll = self.reading(self._polling(bot))
        # Runs once the poll waits for the network: the first getUpdates goes out before the rest starts.
        asyncio.get_running_loop().call_soon(self._start_the_rest)

    async def _at_start(self, call: Callable[[], Awaitable[T]], retried: type[TelegramError]) -> T:
        """A start-up call, asked again (``START_ATTEMPTS`` in all) after an error of the kind ``retried``."""
        for attempt in range(1, START_ATTEMPTS):
            try:
                return await call()
            except retried as err:
                if isinstance(err, InvalidToken):
                    raise
                what = "did not answer in time" if isinstance(err, TimedOut) else "failed"
                log.warning(
                    "telegram: the Bot API %s (%s); asking again (%d of %d)", what, err, attempt + 1, START_ATTEMPTS
                )
                await self.sleep(0.0 if isinstance(err, TimedOut) else 1.0)
        return await call()

    async def _polling(self, bot: telegram.Bot) -> None:
        """getUpdates until a stop: each batch stored in the inbox first (``TelegramIntake.fetched``), the offset
        only past what it holds on disk (``confirmable``: Telegram delivers the rest again), then dispatched. A
        timeout asks again at once, another failure after a growing pause; a 409 Conflict or a refused token ends
        the bot (``close`` raises it)."""
        intake, pause = self.intake, 0.0
        while not self.stopping:
            try:
                offset = await intake.confirmable(self._offset)
                updates = await bot.get_updates(offset, timeout=self.poll_timeout, allowed_updates=ALLOWED_UPDATES)
                kept = await intake.fetched(updates, bot)
            except (Conflict, InvalidToken) as err:
                self.failure = err
                log.error("telegram: polling ended: %s; stopping", err)
                self.begin_shutdown("409 Conflict" if isinstance(err, Conflict) else "the token was refused")
                return
            except TimedOut:
                continue
            except Exception as err:  # noqa: BLE001 - the network, the Bot API: polling goes on
                pause = min(POLL_BACKOFF_MAX_SECONDS, max(POLL_BACKOFF_FIRST_SECONDS, pause * 1.5))
                log.warning("telegram: getUpdates failed (%s); asking again in %.3g s", err, pause)
                await self.sleep(pause)
                continue
            pause = 0.0
            if kept:
                self._offset = kept[-1].update_id + 1
            for update in kept:
                self.handle(update)

    async def webhook_update(self, update: Update) -> bool:
        """A webhook POST's update, answered 200 (True) only once it is on disk in the inbox (when the model reads
        it), then dispatched; False (503: Telegram sends it again) when it could not be stored or the bot stops."""
        async with self.intake.order:  # POSTs stored and dispatched in the order they came
            if self.stopping or not await self.intake.fetched([update], update.get_bot(), synced=True):
                return False
            self.handle(update)
        return True

    def handle(self, update: Update) -> None:
        """``dispatch`` ``update`` in a task of its own; called in arrival order, so the tasks start in it."""
        self.handle_apart(self.dispatch(update), f"update {update.update_id}")

    async def dispatch(self, update: Update) -> None:
        """One update, concurrent across chats and in arrival order within one (the module docstring)."""
        bot, intake = update.get_bot(), self.intake
        if not self.access.allowed(update.effective_user):
            await self.access.refuse(update, bot)  # a stranger's update takes no place in a chat's queue
            return
        query = update.callback_query  # a press taken once (``handled_now``; else no message: nothing below)
        if query is not None and await intake.shared.handled_now(str(update.update_id), query.id):
            if query.data in ("reset:yes", "reset:no"):
                await intake.on_reset_choice(update)
            elif re.match(APPROVAL_PATTERN, query.data or ""):
                await self.approvals.on_choice(update)
            return
        message = update.message
        if message is None:  # an edit (ALLOWED_UPDATES asks for none) or another kind
            return
        if is_command(message):
            await intake.command(update, bot)  # /stop at once, the rest in the chat's order
            return
        # In arrival order: the tasks start in that order and take the lock in that order too.
        async with intake.order:
            if intake.model_bound(update, bot):
                await intake.take(update, bot)
                return
            if self.tasks.spawn(message.chat_id, intake.on_message(update, bot), owner=self.access.from_owner(update)):
                return
        await intake.over_limit(update)

    def _start_the_rest(self) -> None:
        if not self.stopping:
            self.reading(self._after_start())  # cancelled at the stop: a deferred start not finished starts no more

    async def _after_start(self) -> None:
        """What the first poll does not need: plugins, commands menu, reminders, digest, background work."""
        bot, intake = self.turns.bot, self.intake
        await asyncio.to_thread(self.runtime.warm_up)
        try:
            await bot.set_my_commands([BotCommand(name, desc) for name, desc in COMMANDS])
        except TelegramError as err:
            log.warning("telegram: setMyCommands failed: %s", err)
        if self.stopping:
            return
        loop, owner = asyncio.get_running_loop(), self.access.settings.owner
        await self.join_jobs_sending(
            self.notices,
            intake.shared.inbox,
            owner_conversation=intake.job_conversation,
            start=intake.shared.start_job,
            morning_digest=self.settings.morning_digest,
            # A served client's `ask` call, with approve_in_chat, is asked in the owner's chat (docs/serve.md).
            ask_owner=None if owner is None else self.approvals.approver(bot, owner, loop),
        )
        self.started.set()

    async def stop_taking(self) -> None:
        """No more updates: the poll (or the webhook) ends, what was fetched is confirmed to Telegram, the updates
        being dispatched are waited for, and a deferred start not finished starts nothing more."""
        if self._webhook is not None:
            self._webhook.stop()
        await super().stop_taking()  # the poll and the deferred start (``reading``)
        if self._poll is not None and self.failure is None:
            with contextlib.suppress(TelegramError):  # timeout 0: the last offset, and no more
                offset = await self.intake.confirmable(self._offset)
                await self.turns.bot.get_updates(offset, timeout=0, allowed_updates=ALLOWED_UPDATES)
        await self.handled()

    async def close(self) -> None:
        """The Bot API client closed; after a 409 Conflict the run ends as failed, saying why (``known_error``)."""
        if self.turns is not None:
            await self.turns.bot.shutdown()
        if self.failure is not None:
            raise self.failure
