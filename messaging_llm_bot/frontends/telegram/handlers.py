"""Telegram handlers: the allowlist gate, commands, and messages routed through the durable inbox."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import telegram
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.ext import (
    Application,
    ApplicationHandlerStop,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    TypeHandler,
    filters,
)

from assistant_framework.access import OWNER_ONLY_COMMANDS, command_allowed, sees_owner_data
from assistant_framework.config.settings import Settings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from messaging_llm_bot.frontends import commands as texts
from messaging_llm_bot.frontends.chatqueue import ChatQueues, max_pending
from messaging_llm_bot.frontends.digest import build_digest
from messaging_llm_bot.frontends.held import StorageOutage, held_text
from messaging_llm_bot.frontends.job_runs import is_job_item
from messaging_llm_bot.frontends.job_texts import jobs_text
from messaging_llm_bot.frontends.pool import pool_size
from messaging_llm_bot.frontends.reminders import reminder_channel
from messaging_llm_bot.frontends.runtime import Runtime
from messaging_llm_bot.frontends.telegram.approval import CALLBACK_PATTERN as APPROVAL_PATTERN
from messaging_llm_bot.frontends.telegram.approval import Approvals
from messaging_llm_bot.frontends.telegram.media import message_kind, unsupported_text
from messaging_llm_bot.frontends.telegram.send import TelegramDeliveryError, send_markdown, send_plain
from messaging_llm_bot.frontends.telegram.settings import (
    TelegramSettings,
    addressed_to_bot,
    chat_of,
    conversation_id,
    for_other_bot,
    is_command,
    message_conversation,
    message_fingerprint,
    message_of,
    topic_of,
)
from messaging_llm_bot.frontends.telegram.turn import TurnRunner, storage_error_text
from messaging_llm_bot.frontends.voice import voice_command
from messaging_llm_bot.llm.transcribe import transcription_settings

log = logging.getLogger(__name__)

MODEL_KINDS = ("text", "document", "photo", "voice")
#: A stranger is told at most this often that they are not allowed (the rest of their messages: silence).
REFUSAL_EVERY_SECONDS = 60.0


def refusal_text(user_id: int) -> str:
    """The one reply an unknown user gets."""
    return (
        f"Sorry, you are not authorised to use this bot. Your user id is {user_id}; "
        "the owner can add it to telegram.allowed_user_ids."
    )


class Frontend:
    """State and handlers of the Telegram frontend for one runtime."""

    def __init__(self, runtime: Runtime, inbox: Inbox) -> None:
        self.runtime = runtime
        self._settings: tuple[Settings, TelegramSettings] | None = None
        self.inbox = inbox
        self.items: dict[int, InboxItem] = {}  # update_id -> item persisted when fetched
        self.duplicates: set[int] = set()
        self.approvals = Approvals()
        self.turns = TurnRunner(runtime, inbox, lambda: self.settings, self.approvals)
        # Per chat: arrival order, at most runtime.max_pending_per_chat, the owner first; as many at once
        # as the turn pool has threads.
        self.queues = ChatQueues(
            "telegram", lambda: pool_size(self.runtime.settings), lambda: max_pending(self.runtime.settings)
        )
        self._refused_at: dict[int, float] = {}  # stranger -> when last told (monotonic)
        self.job_items: dict[str, asyncio.Future] = {}  # job runs waiting in the owner's queue or running
        self.outage = StorageOutage("telegram")  # the inbox cannot store: updates held unconfirmed

    @property
    def settings(self) -> TelegramSettings:
        """The ``telegram`` settings of the runtime's current records: a ``/reload`` (from this chat or another
        frontend) changes the allowlist, the owner and the group mode at once; the keys that need a restart
        keep their running value there (assistant_framework/config/reloadable.py)."""
        current = self.runtime.settings
        if self._settings is None or self._settings[0] is not current:
            self._settings = (current, TelegramSettings.from_settings(current))
        return self._settings[1]

    # -- rules ------------------------------------------------------------------

    def allowed(self, user: telegram.User | None) -> bool:
        """Deny by default: only numeric ids in telegram.allowed_user_ids."""
        return user is not None and user.id in self.settings.allowed_user_ids

    def owner_data(self, update: Update) -> bool:
        """True only in the owner's own private chat (assistant_framework.access: the rule of every frontend)."""
        user, chat = update.effective_user, update.effective_chat
        return sees_owner_data(
            user is not None and user.id == self.settings.owner_id, chat is not None and chat.type == "private"
        )

    def owner_only(self, name: str, callback: Any) -> Any:
        """``callback`` of an owner-only command, run only in the owner's own private chat.

        The check sits in the handler PTB chose, so whatever spelling PTB matched (``/NOW``, ``/now!``,
        ``/now@Bot``) is the command checked: no second parser that could read it differently."""

        async def checked(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
            if command_allowed(name, self.owner_data(update)):
                await callback(update, context)
                return
            log.info(
                "telegram: /%s refused for user %s in chat %s (owner only)",
                name,
                update.effective_user.id if update.effective_user else None,
                update.effective_chat.id if update.effective_chat else None,
            )
            await self._send(update, context.bot, texts.owner_only_text(name))

        return checked

    def from_owner(self, update: Update) -> bool:
        """True when the owner sent the update (in any chat): their turns go first, and are never refused."""
        user = update.effective_user
        return user is not None and user.id == self.settings.owner_id

    async def over_limit(self, update: Update, bot: telegram.Bot) -> None:
        """A message beyond its chat's ``runtime.max_pending_per_chat``: not answered and out of the inbox;
        the chat is told once per backlog (frontends/chatqueue.py)."""
        chat = update.effective_chat
        tell, waiting = self.queues.refused(chat.id), self.queues.pending(chat.id)  # now, while the backlog is there
        self.duplicates.discard(update.update_id)
        item = self.items.pop(update.update_id, None)
        if item is not None:
            try:
                await asyncio.to_thread(self.inbox.complete, item.item_id)
            except OSError as err:  # it would be answered at the next start: no harm
                log.warning("telegram: could not drop %s from the inbox: %s", item.item_id, err)
        if not tell:
            return
        try:
            await self._send(update, bot, texts.backlog_text(waiting))
        except (telegram.error.TelegramError, TelegramDeliveryError) as err:
            log.info("telegram: the backlog notice to chat %s failed: %s", chat.id, err)

    def for_model(self, update: Update, bot: telegram.Bot) -> bool:
        """True when an update is a message the model will answer (so it goes into the inbox)."""
        message = update.message
        if message is None or not self.allowed(message.from_user) or is_command(message):
            return False
        kind = message_kind(message)
        if kind not in MODEL_KINDS:
            return False
        if kind == "voice" and transcription_settings(self.runtime.settings.llm) is None:
            return False
        return addressed_to_bot(message, bot.username or "", bot.id if bot.username else None, self.settings.group_mode)

    async def take(self, updates: Sequence[Update], bot: telegram.Bot) -> Sequence[Update]:
        """The fetched updates that may be confirmed to Telegram: each model-bound one is in the inbox first.

        At the first one the inbox cannot store (disk full, read-only, out of descriptors), that one and
        the rest stay unconfirmed: Telegram delivers them again at the next ``getUpdates`` and storing is
        tried again then, after a pause that grows while the outage lasts (frontends/held.py); its chat is
        told once that the message waits."""
        kept, err = await asyncio.to_thread(self.persist, updates, bot)
        if err is None:
            self.outage.ok()
            return updates
        held = updates[kept]
        pause = self.outage.failed(err, f"update {held.update_id}")
        chat = held.effective_chat
        if chat is not None and self.outage.tell(chat.id):
            try:
                await send_plain(bot, chat.id, held_text(err))
            except (telegram.error.TelegramError, TelegramDeliveryError) as send_err:
                log.info("telegram: the notice to chat %s that its message waits failed: %s", chat.id, send_err)
        if kept == 0 and not self.turns.stopping:
            await asyncio.sleep(pause)  # nothing to hand on: wait before Telegram is asked (and storing tried) again
        return updates[:kept]

    def persist(self, updates: Sequence[Update], bot: telegram.Bot) -> tuple[int, OSError | None]:
        """Write model-bound updates to the inbox; (how many leading updates may be confirmed, the error that
        stopped the rest or None)."""
        try:
            wanted = [u for u in updates if u.update_id not in self.items and self.for_model(u, bot)]
        except Exception:  # noqa: BLE001 - fall back to one update at a time below
            wanted = []
        if len(wanted) > 1:
            # A burst: one batch whose fsyncs the file system commits together.
            try:
                accepted = self.inbox.accept_many(
                    [
                        (
                            str(u.update_id),
                            message_conversation(message_of(u)),
                            u.to_dict(),
                            message_fingerprint(message_of(u)),
                        )
                        for u in wanted
                    ]
                )
            except OSError:  # e.g. disk full: one by one below, which finds (and reports) the one that fails
                log.debug("telegram: batch write of %d updates to the inbox failed; one at a time", len(wanted))
            except Exception:  # noqa: BLE001 - an odd update: one by one below
                log.warning("telegram: batch write of %d updates to the inbox failed; one at a time", len(wanted))
            else:
                for update, item in zip(wanted, accepted, strict=False):
                    if item is None:
                        self.duplicates.add(update.update_id)
                    else:
                        self.items[update.update_id] = item
        for index, update in enumerate(updates):
            try:
                if update.update_id in self.items or not self.for_model(update, bot):
                    continue
                item = self.inbox.accept(
                    str(update.update_id),
                    message_conversation(message_of(update)),
                    update.to_dict(),
                    message_fingerprint(message_of(update)),
                )
            except OSError as err:  # storage: this one and the rest are not confirmed (Telegram keeps them)
                return index, err
            except Exception:  # noqa: BLE001 - one odd update must not stall polling; the handler retries
                log.exception("telegram: could not persist update %s to the inbox", update.update_id)
                continue
            if item is None:
                self.duplicates.add(update.update_id)
            else:
                self.items[update.update_id] = item
        return len(updates), None

    # -- gate (group -2) --------------------------------------------------------

    async def gate(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Stop updates from unknown users (one short refusal) and duplicates, before any other handler."""
        if update.update_id in self.duplicates:
            self.duplicates.discard(update.update_id)
            log.info("telegram: update %s was already answered; skipping the duplicate", update.update_id)
            raise ApplicationHandlerStop
        user = update.effective_user
        if self.allowed(user):
            return
        if user is not None:
            await self._refuse(update, context.bot, user)
        raise ApplicationHandlerStop

    async def _refuse(self, update: Update, bot: telegram.Bot, user: telegram.User) -> None:
        log.info("telegram: refused user id %s (not in telegram.allowed_user_ids)", user.id)
        try:
            if update.callback_query is not None:
                await update.callback_query.answer(refusal_text(user.id), show_alert=True)
                return
            message = update.message
            if message is None or for_other_bot(message, bot.username):
                return  # /cmd@otherbot: for another bot in the group, not a request to this one
            if message.chat.type != "private" and not (
                is_command(message) or addressed_to_bot(message, bot.username or "", bot.id, "mention")
            ):
                return  # a group conversation not addressed to the bot: stay quiet
            if not self._refusal_due(user.id):
                return  # told a moment ago: a stranger's flood must not spend the replies' send budget
            await message.reply_text(refusal_text(user.id), do_quote=message.chat.type != "private")
        except telegram.error.TelegramError as err:
            log.info("telegram: refusal to %s failed: %s", user.id, err)

    def _refusal_due(self, user_id: int) -> bool:
        """True when a stranger was not told within ``REFUSAL_EVERY_SECONDS`` (and note that they are now)."""
        now = time.monotonic()
        if now - self._refused_at.get(user_id, float("-inf")) < REFUSAL_EVERY_SECONDS:
            return False
        if len(self._refused_at) >= 10_000:  # bounded: forget the ones told long ago
            self._refused_at = {u: t for u, t in self._refused_at.items() if now - t < REFUSAL_EVERY_SECONDS}
        self._refused_at[user_id] = now
        return True

    # -- messages ---------------------------------------------------------------

    async def on_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Any non-command message: through the inbox to the model, or a short 'not supported'."""
        message = message_of(update)
        bot = context.bot
        kind = message_kind(message)
        if not addressed_to_bot(message, bot.username or "", bot.id, self.settings.group_mode):
            return
        if not self.for_model(update, bot):
            await message.reply_text(unsupported_text(kind), do_quote=message.chat.type != "private")
            return
        item = self.items.pop(update.update_id, None)
        if item is None:  # webhook mode or a direct process_update: persist now
            try:
                item = await asyncio.to_thread(
                    self.inbox.accept,
                    str(update.update_id),
                    message_conversation(message),
                    update.to_dict(),
                    message_fingerprint(message),
                )
            except OSError as err:  # disk full, read-only: say so; the model would not see it anyway
                log.error(
                    "telegram: message %s in chat %s could not be stored in the inbox: %s",
                    message.message_id,
                    message.chat_id,
                    err,
                )
                await message.reply_text(storage_error_text(err), do_quote=message.chat.type != "private")
                return
            if item is None:
                return
        await self.turns.answer(bot, item)

    async def start_replay(self, bot: telegram.Bot) -> asyncio.Future | None:
        """Answer items a crash left in the inbox, in order per chat.

        Every item takes its place in its chat's queue here, before polling starts (never refused: it
        was accepted), so new messages of that chat wait until the old ones are answered; the answering
        itself runs in the background.
        """
        items = self.inbox.pending("tg:")  # other frontends replay their own; oldest first
        for item in [i for i in items if is_job_item(i)]:
            self.start_job_item(bot, item)  # a job run left by a crash: in its place in the owner's queue
        items = [i for i in items if not is_job_item(i)]
        if not items:
            return None
        log.info("telegram: answering %d message(s) left unanswered by the last run", len(items))

        async def replay(item: InboxItem) -> None:
            try:
                await self.turns.answer(bot, item)
            except Exception:  # noqa: BLE001 - a replay failure must not kill the bot
                log.exception("telegram: replay of %s failed", item.item_id)

        runs = []
        for item in items:
            sender = ((item.payload.get("message") or {}).get("from") or {}).get("id")
            chat = chat_of(item.conversation_id)
            job = self.queues.admit(chat, owner=sender == self.settings.owner_id, exempt=True)
            assert job is not None  # exempt: never refused
            runs.append(self.queues.run(job, replay(item)))
        return asyncio.gather(*runs)

    def start_job_item(self, bot: telegram.Bot, item: InboxItem) -> None:
        """Answer a job run's item in its chat's queue (the owner's: first, never refused); once at a time."""
        if item.item_id in self.job_items:
            return
        job = self.queues.admit(chat_of(item.conversation_id), owner=True, exempt=True)
        assert job is not None  # exempt: never refused
        task = asyncio.ensure_future(self.queues.run(job, self.turns.answer(bot, item)))
        self.job_items[item.item_id] = task
        key = item.item_id

        def forget(_task: asyncio.Future) -> None:
            self.job_items.pop(key, None)

        task.add_done_callback(forget)

    def claim_job(self, job: Job) -> str | None:
        """The conversation a job's runs go to here: the owner's private chat, for jobs made on Telegram or
        by hand (no chat); a job's reply is the owner's data, so never another chat whatever the row says."""
        owner = self.settings.owner_id
        if owner is None or (job.chat_id not in (None, "") and reminder_channel(job.chat_id) != "telegram"):
            return None
        return conversation_id(owner)

    # -- commands ---------------------------------------------------------------

    async def _send(self, update: Update, bot: telegram.Bot, markdown: str) -> None:
        chat = update.effective_chat
        reply_to = update.effective_message.message_id if chat.type != "private" else None
        topic = topic_of(update.effective_message)  # a command in a forum topic is answered there
        await send_markdown(bot, chat.id, markdown, reply_to_message_id=reply_to, topic=topic)

    @staticmethod
    def conversation(update: Update) -> str:
        """The conversation id of the chat or forum topic an update came from."""
        message = update.effective_message
        if message is None:  # every handler that asks has a message (or a button under one)
            raise ValueError(f"update {update.update_id} carries no message")
        return message_conversation(message)

    def _offered(self, update: Update) -> list[str]:
        """The skills this chat's turns are offered (the agent decides): all only in the owner's own chat."""
        return self.runtime.agent.offered_skills(self.owner_data(update))

    async def cmd_help(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        text = texts.help_text(self._offered(update), owner_data=self.owner_data(update))
        await self._send(update, context.bot, text)

    async def cmd_skills(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        text = texts.skills_text(self.runtime.skills, self._offered(update), owner_data=self.owner_data(update))
        await self._send(update, context.bot, text)

    async def cmd_skill(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        name = " ".join(context.args or [])
        await self._send(update, context.bot, texts.skill_text(self.runtime.skills, name, self._offered(update)))

    async def cmd_status(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not self.owner_data(update):  # model, skills and collector errors are the owner's business
            await self._send(update, context.bot, texts.GUEST_STATUS)
            return
        await self._send(update, context.bot, await asyncio.to_thread(self.runtime.status_text))

    async def cmd_now(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await self._send(update, context.bot, await asyncio.to_thread(self.digest_text))

    async def cmd_jobs(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        tz = self.settings.timezone
        text = await asyncio.to_thread(jobs_text, self.runtime.workspace, datetime.now(ZoneInfo(tz)), tz)
        await self._send(update, context.bot, text)

    def digest_text(self) -> str:
        """The /now digest for this moment (no model call)."""
        tz = self.settings.timezone
        return build_digest(self.runtime.workspace, datetime.now(ZoneInfo(tz)), tz)

    async def cmd_reload(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        report = await asyncio.to_thread(self.runtime.reload)
        await self._send(update, context.bot, texts.reload_text(report))

    async def cmd_stats(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        caps = await asyncio.to_thread(texts.runtime_caps, self.runtime)
        text = await asyncio.to_thread(texts.stats_text, self.runtime.workspace, caps=caps)
        await self._send(update, context.bot, text)

    async def cmd_why(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        conversation = self.conversation(update)
        agent = self.runtime.agent
        await self._send(
            update, context.bot, texts.why_text(agent.last_recall(conversation), agent.last_summary(conversation))
        )

    async def cmd_voice(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """/voice, /voice on, /voice off: whether this chat's replies are spoken too (frontends/voice.py)."""
        text = await asyncio.to_thread(
            voice_command,
            self.turns.flags,
            self.runtime.settings.voice,
            self.conversation(update),
            " ".join(context.args or []),
        )
        await self._send(update, context.bot, text)

    async def on_unknown_command(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = message_of(update)
        command = (message.text or "").split()[0]
        if for_other_bot(message, context.bot.username):
            return  # meant for another bot in the group
        await self._send(update, context.bot, f"Unknown command {command}. /help lists what I understand.")

    async def cmd_stop(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Stop the turn running in this chat; an open confirmation question counts as declined."""
        chat = update.effective_chat
        stopped = self.runtime.agent.stop(self.conversation(update))
        if stopped and self.approvals is not None:
            self.approvals.decline_all(chat.id)
        await self._send(update, context.bot, texts.STOPPING_TEXT if stopped else texts.NOTHING_TO_STOP_TEXT)

    async def cmd_reset(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Say what will be cleared and ask for confirmation with a button."""
        keyboard = InlineKeyboardMarkup(
            [
                [
                    InlineKeyboardButton("Clear history", callback_data="reset:yes"),
                    InlineKeyboardButton("Cancel", callback_data="reset:no"),
                ]
            ]
        )
        await update.effective_message.reply_text(
            "This clears the message history of this conversation, so I forget what we talked about here. "
            "Notes, tasks, reminders, learnings and other saved data are kept.",
            reply_markup=keyboard,
        )

    async def cmd_new(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Start a new conversation in this chat or topic (the earlier one is kept)."""
        made = await asyncio.to_thread(self.runtime.agent.new_session, self.conversation(update))
        await self._send(update, context.bot, texts.new_text(*made))

    async def cmd_sessions(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        listing = await asyncio.to_thread(self.runtime.agent.session_list, self.conversation(update))
        await self._send(update, context.bot, texts.sessions_text(*listing))

    async def cmd_resume(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        args = " ".join(context.args or [])
        text = await asyncio.to_thread(texts.resume_command, self.runtime, self.conversation(update), args)
        await self._send(update, context.bot, text)

    async def on_reset_choice(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        await query.answer()
        if query.data == "reset:yes":
            text = await asyncio.to_thread(self.runtime.agent.reset, self.conversation(update))
        else:
            text = "Kept the history."
        await query.edit_message_text(text)

    # -- wiring -----------------------------------------------------------------

    def register(self, app: Application) -> None:
        """Add the gate, command, callback and message handlers to ``app``."""
        app.add_handler(TypeHandler(Update, self.gate), group=-2)
        only_new = filters.UpdateType.MESSAGE  # an edited message must not trigger a second answer
        command = filters.COMMAND & ~filters.FORWARDED  # a forwarded "/reset" is someone else's text (is_command)
        for name, callback in (
            ("start", self.cmd_help),
            ("help", self.cmd_help),
            ("skills", self.cmd_skills),
            ("skill", self.cmd_skill),
            ("stop", self.cmd_stop),
            ("reset", self.cmd_reset),
            ("new", self.cmd_new),
            ("sessions", self.cmd_sessions),
            ("resume", self.cmd_resume),
            ("status", self.cmd_status),
            ("now", self.cmd_now),
            ("jobs", self.cmd_jobs),
            ("reload", self.cmd_reload),
            ("stats", self.cmd_stats),
            ("why", self.cmd_why),
            ("voice", self.cmd_voice),
        ):
            if name in OWNER_ONLY_COMMANDS:
                callback = self.owner_only(name, callback)
            app.add_handler(CommandHandler(name, callback, filters=only_new & ~filters.FORWARDED))
        app.add_handler(CallbackQueryHandler(self.on_reset_choice, pattern=r"^reset:(yes|no)$"))
        app.add_handler(CallbackQueryHandler(self.approvals.on_choice, pattern=APPROVAL_PATTERN))
        app.add_handler(MessageHandler(only_new & command, self.on_unknown_command))
        app.add_handler(MessageHandler(only_new & ~command, self.on_message))
