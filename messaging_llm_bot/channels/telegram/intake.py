"""Updates into the shared intake (conversation/intake.py's ``ChannelIntake``, docs/channels.md): each
model-bound update stored before Telegram is told it arrived, then taken in its chat's order. Here: which updates
the model answers, what the shared intake reads of one, /reset's buttons, a short answer to what it cannot read."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence

import telegram
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update

from assistant_framework.jobs import Job
from messaging_llm_bot.channels.telegram.access import Access
from messaging_llm_bot.channels.telegram.media import message_kind
from messaging_llm_bot.channels.telegram.send import address
from messaging_llm_bot.channels.telegram.settings import (
    addressed_to_bot,
    command_line,
    conversation_id,
    for_other_bot,
    is_command,
    message_conversation,
    message_fingerprint,
    message_of,
    strip_mention,
    topic_in,
    topic_of,
)
from messaging_llm_bot.channels.telegram.turn import TelegramTurns, joinable
from messaging_llm_bot.conversation import commands as texts
from messaging_llm_bot.conversation.attachments import unsupported_text
from messaging_llm_bot.conversation.intake import Arrival, ChannelIntake, Say
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.llm.transcribe import transcription_settings

log = logging.getLogger(__name__)

MODEL_KINDS = ("text", "document", "photo", "voice")


class TelegramIntake:
    """The inbox side of the Telegram frontend: what is stored, confirmed, queued and answered."""

    def __init__(self, runtime: Runtime, access: Access, turns: TelegramTurns, shared: ChannelIntake) -> None:
        self.runtime = runtime
        self.access = access
        self.turns = turns
        self.shared = shared  # stores, refuses beyond the bound, joins or queues (conversation/intake.py)
        # One update at a time from storing to its place in its chat's queue (and a webhook's POSTs from storing to
        # their dispatch): Telegram's order holds per chat.
        self.order = asyncio.Lock()

    def for_model(self, update: Update, bot: telegram.Bot) -> bool:
        """True when an update is a message the model will answer (so it goes into the inbox); the allowlist
        first (telegram/access.py): a stranger's message is never stored."""
        message = update.message
        if message is None or not self.access.allowed(message.from_user) or is_command(message):
            return False
        kind = message_kind(message)
        if kind not in MODEL_KINDS:
            return False
        if kind == "voice" and transcription_settings(self.runtime.settings.llm) is None:
            return False
        return addressed_to_bot(
            message, bot.username or "", bot.id if bot.username else None, self.access.settings.group_mode
        )

    def arrival(self, update: Update, bot: telegram.Bot) -> Arrival:
        """What the shared intake reads of a model-bound update (``for_model``): its id taken once, unless another
        Bot API server reuses it for another message (the fingerprint); the chat's queue; what it adds to a turn
        it joins."""
        message = message_of(update)
        sender = message.from_user.id if message.from_user is not None else 0
        return Arrival(
            str(update.update_id),
            message_conversation(message),
            update.to_dict(),
            sender,
            sender == self.access.settings.owner,
            strip_mention(message.text or "", bot.username or ""),
            message.message_id,
            joinable(message),
            queue=message.chat_id,
            fingerprint=message_fingerprint(message),
        )

    def say(self, update: Update) -> Say:
        """A short text in the update's chat, in the forum topic it came from, quoting it in a group; best effort."""
        chat, message = update.effective_chat, update.effective_message
        quote = str(message.message_id) if chat.type != "private" else None
        return functools.partial(self.turns.say, address(chat.id, topic_of(message)), reply_to=quote)

    async def fetched(self, updates: Sequence[Update], bot: telegram.Bot, *, synced: bool = False) -> Sequence[Update]:
        """The fetched updates that may be confirmed to Telegram (bot.py's poll, or a webhook POST's one, ``synced``):
        each model-bound one is in the inbox first (``ChannelIntake.store_all``); from one that could not be stored
        (held till a stop, or refused to a webhook) none is: Telegram delivers them again."""
        bound: dict[str, tuple[Update, Arrival]] = {}
        for update in updates:
            try:
                if self.for_model(update, bot):
                    bound[str(update.update_id)] = (update, self.arrival(update, bot))
            except Exception:  # noqa: BLE001 - one odd update must not stall polling; its dispatch tries again
                log.exception("telegram: could not read update %s for the inbox", update.update_id)
        arrivals = [arrival for _, arrival in bound.values()]
        count = await self.shared.store_all(
            arrivals, lambda arrival: self.say(bound[arrival.source_id][0]), synced=synced
        )
        if count == len(arrivals):
            return updates
        return updates[: updates.index(bound[arrivals[count].source_id][0])]

    async def confirmable(self, offset: int) -> int:
        """The next getUpdates' offset: no further than the first update not yet on disk (``first_unsynced``)."""
        first = await self.shared.first_unsynced()
        return offset if first is None else min(offset, int(first))

    def model_bound(self, update: Update, bot: telegram.Bot) -> bool:
        """True for an update stored when it was fetched, or one the model answers (``take`` stores it now)."""
        return str(update.update_id) in self.shared.fetched or self.for_model(update, bot)

    async def take(self, update: Update, bot: telegram.Bot) -> None:
        """A model-bound update, in arrival order (``order``), to the shared intake (``ChannelIntake.take``), with
        its item when it was stored as it was fetched."""
        stored, arrival = self.shared.fetched.pop(str(update.update_id), (None, None))
        if stored is not None:
            stored.received = update  # its turn reads the update, not its payload decoded again
        # As read when it was fetched: the update's to_dict once a turn.
        await self.shared.take(arrival or self.arrival(update, bot), self.say(update), stored=stored)

    async def over_limit(self, update: Update) -> None:
        """A command or a message the model does not read, beyond its chat's bound (``ChannelIntake.over_limit``)."""
        await self.shared.over_limit(update.effective_chat.id, self.say(update))

    async def command(self, update: Update, bot: telegram.Bot) -> None:
        """A command (``is_command``), read from its ``bot_command`` entity, to the shared intake
        (``ChannelIntake.command``) in arrival order (``order``); not one for another bot (``/cmd@otherbot``)."""
        message = message_of(update)
        if for_other_bot(message, bot.username):
            return
        answer = self.shared.command(
            command_line(message),
            message_conversation(message),
            self.say(update),
            owner=self.access.from_owner(update),
            owner_data=self.access.owner_data(update),
            decline=functools.partial(self.turns.approvals.questions.decline_all, message.chat_id),
            ask_reset=functools.partial(self.ask_reset, message),
            source=(str(update.update_id), message_fingerprint(message)),  # a webhook's update posted again: once
        )
        async with self.order:
            await answer

    @staticmethod
    async def ask_reset(message: telegram.Message) -> None:
        """/reset's question under its two buttons (``on_reset_choice``), in the chat or topic it came from."""
        yes = InlineKeyboardButton("Clear history", callback_data="reset:yes")
        keyboard = InlineKeyboardMarkup([[yes, InlineKeyboardButton("Cancel", callback_data="reset:no")]])
        await message.reply_text(texts.RESET_QUESTION, reply_markup=keyboard)

    async def on_reset_choice(self, update: Update) -> None:
        """A press of /reset's buttons: the conversation's history cleared, or kept."""
        query, message = update.callback_query, update.effective_message
        if query is None or message is None:  # /reset's buttons sit under a message
            raise ValueError(f"update {update.update_id} is no press of a button under a message")
        await query.answer()
        conversation, clear = message_conversation(message), query.data == "reset:yes"
        await query.edit_message_text(await asyncio.to_thread(texts.reset_choice, self.runtime, conversation, clear))

    async def on_message(self, update: Update, bot: telegram.Bot) -> None:
        """A message the model does not read (a kind it cannot, a voice note without transcription): a short
        'not supported', where it was addressed to the bot."""
        message = message_of(update)
        if addressed_to_bot(message, bot.username or "", bot.id, self.access.settings.group_mode):
            await self.say(update)(unsupported_text(message_kind(message)))

    def start_replay(self) -> None:
        """Answer what a crash left in the inbox before polling starts (``ChannelIntake.replay``); the stored parts
        of an album are one turn again."""
        for item in self.shared.inbox.pending("tg:"):
            self.turns.albums.arrived(item, left=True)
        self.shared.replay("tg:", self.turns.sent_by_owner)

    def job_conversation(self, job: Job) -> str | None:
        """The conversation a Telegram job's runs go to: the owner's private chat, in the topic of it the job was
        made in; a job's reply is the owner's data, so never another chat whatever the row says."""
        owner = self.access.settings.owner
        if owner is None:
            return None
        return conversation_id(owner, topic_in(job.conversation_id, owner))
