"""Messages into the durable inbox: each model-bound update is stored before Telegram is told it arrived
(the next ``getUpdates`` offset), answered in its chat's order, and answered again after a crash; job runs
take their place in the owner's queue the same way."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import telegram
from telegram import Update
from telegram.ext import ContextTypes

from assistant_framework.config.settings import TelegramSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.telegram.access import Access
from messaging_llm_bot.channels.telegram.media import message_kind
from messaging_llm_bot.channels.telegram.send import TelegramDeliveryError, TelegramOut, address, answering
from messaging_llm_bot.channels.telegram.settings import (
    addressed_to_bot,
    album_key,
    chat_of,
    conversation_id,
    is_command,
    message_conversation,
    message_fingerprint,
    message_of,
    strip_mention,
    topic_in,
)
from messaging_llm_bot.channels.telegram.turn import TelegramTurns, joinable
from messaging_llm_bot.conversation.albums import Albums, stored_albums
from messaging_llm_bot.conversation.attachments import unsupported_text
from messaging_llm_bot.conversation.chatqueue import ChatQueues
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.held import StorageOutage, held_text, storage_error_text
from messaging_llm_bot.conversation.intake import ChannelIntake, left_by_last_run
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.llm.transcribe import transcription_settings

log = logging.getLogger(__name__)

MODEL_KINDS = ("text", "document", "photo", "voice")


class TelegramIntake:
    """The inbox side of the Telegram frontend: what is stored, confirmed, queued and answered."""

    def __init__(
        self, runtime: Runtime, inbox: Inbox, access: Access, turns: TelegramTurns, queues: ChatQueues, tasks: ChatTasks
    ) -> None:
        self.runtime = runtime
        self.inbox = inbox
        self.access = access
        self.turns = turns
        self.queues = queues
        self.items: dict[int, InboxItem] = {}  # update_id -> item persisted when fetched
        self.duplicates = access.duplicates  # update ids the inbox holds as answered: the gate drops them
        self.tasks = tasks  # the replay's turns and job runs, in their chats' queues
        self.outage = StorageOutage("telegram")  # the inbox cannot store: updates held unconfirmed
        # What every channel's intake shares (conversation/intake.py): the backlog notice, job runs queued once.
        self.shared = ChannelIntake(turns, queues, tasks, self.outage, queue_of=chat_of)
        # Photos sent together: one turn (conversation/albums.py)
        self.albums: Albums[Update] = Albums(album_key, lambda update: update.update_id)

    @property
    def settings(self) -> TelegramSettings:
        """The current ``telegram`` settings."""
        return self.access.settings

    def allowed(self, user: telegram.User | None) -> bool:
        """The allowlist (telegram/access.py): a stranger's message is never stored."""
        return self.access.allowed(user)

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
        tried again then, after a pause that grows while the outage lasts (conversation/held.py); its chat is
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
                await TelegramOut(bot).send_plain(address(chat.id), held_text(err))
            except (telegram.error.TelegramError, TelegramDeliveryError) as send_err:
                log.info("telegram: the notice to chat %s that its message waits failed: %s", chat.id, send_err)
        if kept == 0 and not self.turns.stopping:
            await asyncio.sleep(pause)  # nothing to hand on: wait before Telegram is asked (and storing tried) again
        return updates[:kept]

    def persist(self, updates: Sequence[Update], bot: telegram.Bot) -> tuple[int, OSError | None]:
        """Write model-bound updates to the inbox; (how many leading updates may be confirmed, the error that
        stopped the rest or None). A burst goes in one batch, whose fsyncs the file system commits together;
        one at a time after that (what the batch did not store, or all when it failed) finds the one that fails."""

        def record(update: Update) -> tuple[str, str, dict[str, Any], str]:
            message = message_of(update)
            return str(update.update_id), message_conversation(message), update.to_dict(), message_fingerprint(message)

        def keep(update: Update, item: InboxItem | None) -> None:
            if item is None:
                self.duplicates.add(update.update_id)  # answered already: the gate drops it
            else:
                self.items[update.update_id] = item

        try:
            wanted = [u for u in updates if u.update_id not in self.items and self.for_model(u, bot)]
            if len(wanted) > 1:
                for update, item in zip(wanted, self.inbox.accept_many([record(u) for u in wanted]), strict=False):
                    keep(update, item)
        except Exception as err:  # noqa: BLE001 - disk full, an odd update: one by one below
            log.log(
                logging.DEBUG if isinstance(err, OSError) else logging.WARNING, "telegram: batch write failed: %s", err
            )
        for index, update in enumerate(updates):
            try:
                if update.update_id not in self.items and self.for_model(update, bot):
                    keep(update, self.inbox.accept(*record(update)))
            except OSError as err:  # storage: this one and the rest are not confirmed (Telegram keeps them)
                return index, err
            except Exception:  # noqa: BLE001 - one odd update must not stall polling; the handler retries
                log.exception("telegram: could not persist update %s to the inbox", update.update_id)
        return len(updates), None

    async def over_limit(self, update: Update) -> None:
        """A message beyond its chat's ``runtime.max_pending_per_chat``: not answered and out of the inbox;
        the chat is told once per backlog (conversation/chatqueue.py)."""
        self.duplicates.discard(update.update_id)
        self.albums.dropped(update)
        item = self.items.pop(update.update_id, None)
        to, quote = answering(update)
        # Told once per backlog, now while the backlog is there (best effort: ChatTurns.say logs a failure).
        await self.shared.over_limit(update.effective_chat.id, lambda text: self.turns.say(to, text, quote))
        if item is not None:
            try:
                await asyncio.to_thread(self.inbox.complete, item.item_id)
            except OSError as err:  # it would be answered at the next start: no harm
                log.warning("telegram: could not drop %s from the inbox: %s", item.item_id, err)

    def join_running(self, update: Update, bot: telegram.Bot) -> bool:
        """Hand a message to the turn of the same person running in its chat (busy mode steer or interrupt,
        conversation/busy.py) instead of queueing it; False when it waits its turn. Synchronous, in arrival
        order: the chat's flags are read only while a turn runs there."""
        message = update.message
        if message is None or message.from_user is None or not joinable(message):
            return False
        conversation = message_conversation(message)
        item = self.items.get(update.update_id)  # stored when it was fetched
        if item is None or not self.turns.busy.running(conversation) or not self.for_model(update, bot):
            return False
        text = strip_mention(message.text or "", bot.username or "")
        joined = self.turns.busy.join(
            self.runtime, self.turns.flags, conversation, message.from_user.id, text, message.message_id, item
        )
        if joined:
            self.items.pop(update.update_id, None)
            log.info("telegram: message %s joined the turn running in %s", message.message_id, conversation)
        return joined

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
        if self.albums.taken(update):
            return  # answered with its album, in the turn of an earlier part
        first, *others = await self.albums.gather(update)
        item = await self._stored(first)
        if item is None:
            return
        parts = [part for part in [await self._stored(other) for other in others] if part is not None]
        await self.turns.answer(item, parts)

    async def _stored(self, update: Update) -> InboxItem | None:
        """The inbox item of a model-bound update: stored when it was fetched, or now (webhook mode, a direct
        process_update); None when the inbox held it as answered already, or cannot store it (the chat is told)."""
        item = self.items.pop(update.update_id, None)
        if item is not None:
            return item
        message = message_of(update)
        try:
            return await asyncio.to_thread(
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
            return None

    def start_replay(self, bot: telegram.Bot) -> None:
        """Answer items a crash left in the inbox, in order per chat (conversation/intake.py's left_by_last_run).

        Every item takes its place in its chat's queue here, before polling starts (never refused: it
        was accepted), so new messages of that chat wait until the old ones are answered; the answering
        itself runs in the background. The stored parts of an album are one turn again.
        """
        jobs, items = left_by_last_run(self.inbox, "tg:", "telegram")  # other channels replay their own
        for item in jobs:
            self.shared.start_job(item)  # a job run left by a crash: in its place in the owner's queue
        for item, album in stored_albums(items, lambda stored: _album_of(stored, bot)):
            sender = ((item.payload.get("message") or {}).get("from") or {}).get("id")
            answer = self.turns.answer(item, album)
            self.tasks.spawn(chat_of(item.conversation_id), answer, owner=sender == self.settings.owner, exempt=True)

    def job_conversation(self, job: Job) -> str | None:
        """The conversation a Telegram job's runs go to (conversation/job_router.py decides which jobs are
        Telegram's): the owner's private chat, in the topic of it the job was made in; a job's reply is the
        owner's data, so never another chat whatever the row says."""
        owner = self.settings.owner
        if owner is None:
            return None
        return conversation_id(owner, topic_in(job.conversation_id, owner))


def _album_of(item: InboxItem, bot: telegram.Bot) -> str | None:
    """The album of a stored update, or None (an odd payload is answered, or reported, on its own)."""
    try:
        return album_key(Update.de_json(item.payload, bot))
    except Exception:  # noqa: BLE001 - an odd payload: no album
        return None
