"""Answer one durable inbox item: prepare the model input, run the Agent with progress, deliver with a ledger.

Used for live messages, the start-up replay of items a crash left unanswered and job runs; the caller
holds the chat's lock so the messages of one chat are answered in order.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Callable, Sequence
from datetime import date
from typing import TYPE_CHECKING

import telegram
from telegram import InputFile, Update
from telegram.error import BadRequest, NetworkError, TelegramError

from assistant_framework.access import sees_owner_data
from assistant_framework.config.settings import TelegramSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.telegram.approval import Approvals
from messaging_llm_bot.channels.telegram.files import send_workspace_file
from messaging_llm_bot.channels.telegram.format import CAPABILITIES, render_markdown
from messaging_llm_bot.channels.telegram.media import message_kind, save_attachment, transcribe_voice
from messaging_llm_bot.channels.telegram.progress import TelegramLive
from messaging_llm_bot.channels.telegram.send import (
    TelegramDeliveryError,
    edit_text_safely,
    or_general,
    refused_for_good,
    send_markdown,
    send_plain,
)
from messaging_llm_bot.channels.telegram.settings import chat_of, message_of, strip_mention, topic_in, topic_of
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.files_out import file_sender
from messaging_llm_bot.conversation.images import FilesInput, files_input
from messaging_llm_bot.conversation.item_turns import ItemTurns
from messaging_llm_bot.conversation.job_answer import answer_job_run
from messaging_llm_bot.conversation.progress import Progress
from messaging_llm_bot.conversation.reminders import DeliveryRefused
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import Received, TurnRequest
from messaging_llm_bot.conversation.voice import VoiceNote

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from assistant_framework.memory.service import MemoryService

log = logging.getLogger(__name__)


class TurnRunner(ItemTurns):
    """Runs turns for the Telegram frontend; one instance per application."""

    bot: telegram.Bot  # the application's, set when it is built (Frontend.register), before any update

    def __init__(
        self,
        runtime: Runtime,
        inbox: Inbox,
        settings_ref: Callable[[], TelegramSettings],
        approvals: Approvals | None = None,
    ) -> None:
        super().__init__(runtime, inbox, "telegram")
        self.approvals = approvals
        self._settings_ref = settings_ref  # callable returning the current telegram record (changes on /reload)
        self._albums: dict[str, list[InboxItem]] = {}  # item id -> the rest of its album, while it is answered

    @property
    def settings(self) -> TelegramSettings:
        return self._settings_ref()

    async def answer(self, item: InboxItem, parts: Sequence[InboxItem] = ()) -> None:
        """Answer ``item`` and complete it (conversation/item_turns.py). ``parts``: the rest of ``item``'s album
        (conversation/albums.py), answered in the same turn and completed with it."""
        self._albums[item.item_id] = list(parts)
        try:
            await super().answer(item)
        finally:
            self._albums.pop(item.item_id, None)

    async def answer_message(self, item: InboxItem) -> None:
        message = message_of(Update.de_json(item.payload, self.bot))
        parts = self._albums.get(item.item_id, [])
        chat_id, topic = message.chat_id, topic_of(message)  # a forum topic's message is answered in that topic
        # Quote the question only in groups, where several people talk; private chats stay clean.
        reply_to = message.message_id if message.chat.type != "private" else None
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []  # offered to the turn too late: each answered in its own turn after it
        produced = reply is None  # answered in this run (a replay's reply was spoken, or not, before)
        progress: Progress | None = None
        if reply is None:
            # A live message left by a crashed run is taken over (edited), never left behind beside a new one.
            progress = Progress(
                TelegramLive(self.bot, chat_id, topic),  # in the forum topic: status and typing show there
                show_status=self.settings.progress,
                stream=self.settings.stream,
                edit_interval=self.settings.edit_interval_seconds,
                message_id=item.live,
                on_message=lambda mid: self.record_live(item.item_id, mid),
            )
            produce = functools.partial(self._produce_reply, item, message, progress, parts)
            sender = message.from_user.id if message.from_user else None
            reply, merged, later = await self.make_reply(item, sender, joinable(message), produce, after=progress.stop)

        async def attempt() -> bool:
            try:
                await self.deliver(item, chat_id, reply, reply_to, progress, topic)
                return True
            except TelegramDeliveryError as err:
                if isinstance(err.cause, NetworkError) and not isinstance(err.cause, BadRequest):
                    log.error(
                        "telegram: the reply of %s (%r) was not delivered: %s; it stays in the inbox and is "
                        "resent at the next start",
                        item.item_id,
                        _excerpt(message),
                        err,
                    )
                    return False
                raise DeliveryError(str(err)) from err

        if not await self.deliver_until(item, chat_id, attempt):
            return  # left pending: the next start-up resends the missing parts
        if produced:
            await self._speak(item, message, reply)
        await self.finish(item, [*merged, *(part.item_id for part in parts)], later)

    async def _produce_reply(
        self,
        item: InboxItem,
        message: telegram.Message,
        progress: Progress,
        parts: Sequence[InboxItem] = (),
    ) -> str:
        bot, user, topic = self.bot, message.from_user, topic_of(message)
        from_owner = user is not None and user.id == self.settings.owner
        owner_chat = sees_owner_data(from_owner, message.chat.type == "private")
        got = await self.read(item.conversation_id, owner_chat, self._received(message, parts))
        if isinstance(got, str):
            return got  # not fetched, HEIC, too large, unreadable, no transcript: one sentence
        await progress.start()
        approve = None
        if self.approvals is not None and owner_chat:
            # Only the owner's private chat can confirm; elsewhere "ask" means no.
            approve = self.approvals.approver(bot, message.chat_id, asyncio.get_running_loop(), topic)
        send_file = file_sender(
            self.runtime.workspace,
            item.item_id,
            asyncio.get_running_loop(),
            lambda one: send_workspace_file(bot, message.chat_id, topic, one),
            CAPABILITIES.max_file_bytes,
        )
        request = TurnRequest(
            item.conversation_id,
            got.text,
            chat_id=message.chat_id,
            user_id=user.id if user else None,
            message_id=message.message_id,
            owner_chat=owner_chat,
            from_owner=from_owner,
            untrusted=got.untrusted,
            outside=got.outside,
            images=got.images,
            notice=got.notice,
            send_file=send_file,
        )
        # llm.stream asks the model for a stream; telegram.stream decides whether the message shows it.
        return await self.ask_agent(request, approve=approve, on_event=progress.on_event)

    def _received(self, message: telegram.Message, parts: Sequence[InboxItem]) -> Received:
        """The message (with the rest of its album) as the model reads it (conversation/turn.py)."""
        bot, kind = self.bot, message_kind(message)
        # Someone else's words passed on by the user (a forward, an inline bot's text): data, never instructions.
        origin = outside_origin(message)
        album = [message, *(message_of(Update.de_json(part.payload, bot)) for part in parts)]

        async def save(area: Workspace, today: date, index: MemoryService | None) -> FilesInput | str:
            saved = [await save_attachment(bot, area, one, today) for one in album]
            return await files_input(area, saved, self.runtime.settings, origin or "", index)

        async def echo(text: str) -> None:  # a transcript longer than one message goes in parts
            try:
                await send_plain(
                    bot, message.chat_id, text, reply_to_message_id=message.message_id, topic=topic_of(message)
                )
            except TelegramDeliveryError as err:  # the echo is a courtesy: the note is still answered
                log.warning("telegram: could not show the transcript in chat %s: %s", message.chat_id, err)

        label = {"text": "Message", "voice": "Voice note (transcript)"}.get(kind)
        return Received(
            kind,
            strip_mention(message.text or "", bot.username or "") if kind == "text" else "",
            save,
            lambda config: transcribe_voice(bot, message, config),
            echo,
            f"{label} {origin}" if label and origin else None,  # the agent quotes it under this label
            f"Sorry, I can't handle a {kind} message.",
        )

    async def _speak(self, item: InboxItem, message: telegram.Message, reply: str) -> None:
        """The reply as voice notes too when the chat wants it (conversation/turn.py)."""

        async def send(index: int, note: VoiceNote) -> None:
            await self.bot.send_voice(
                message.chat_id,
                InputFile(note.audio, filename=f"reply-{index + 1}.ogg"),
                duration=math.ceil(note.seconds) if note.seconds else None,
                message_thread_id=topic_of(message),
            )

        try:
            await self.speak(item.conversation_id, message_kind(message) == "voice", reply, send)
        except TelegramError as err:
            log.warning("telegram: the voice reply in chat %s was not sent (the text was): %s", message.chat_id, err)

    async def deliver(
        self,
        item: InboxItem,
        chat_id: int,
        reply: str,
        reply_to: int | None,
        progress: Progress | None,
        topic: int | None = None,
    ) -> None:
        """Send ``reply`` through the ledger: the parts not sent yet, each recorded as it goes out (a crash
        resends only the rest); the streamed message, when there is one, becomes the first part. The one
        delivery path of chat turns and job runs."""
        bot, skip = self.bot, self.inbox.parts_sent(item.item_id)
        if progress is None and skip == 0 and item.live is not None:
            # Replay of a reply produced before a crash: the live message shown then becomes its first part.
            if await self._finalise_stream(chat_id, item.live, reply):
                await asyncio.to_thread(self.inbox.record_part, item.item_id, 0, item.live)
                skip = 1
        elif progress is not None and progress.message_id is not None:
            if (
                skip == 0
                and progress.showing_stream
                and await self._finalise_stream(chat_id, progress.message_id, reply)
            ):
                await asyncio.to_thread(self.inbox.record_part, item.item_id, 0, progress.message_id)
                skip = 1
            else:
                await progress.discard()

        async def on_part_sent(index: int, message_id: int) -> None:
            await self.record_part(item.item_id, index, message_id)

        await send_markdown(
            bot,
            chat_id,
            reply,
            reply_to_message_id=reply_to if skip == 0 else None,
            skip_parts=skip,
            on_part_sent=on_part_sent,
            topic=topic,
        )

    async def _finalise_stream(self, chat_id: int, message_id: int, reply: str) -> bool:
        """Replace the streamed text with the formatted first part; False if the edit did not land."""
        part = render_markdown(reply)[0]
        return await edit_text_safely(self.bot, chat_id, message_id, part.text, entities=part.entities, tries=3)

    async def answer_job(self, item: InboxItem) -> None:
        """A job run made and delivered (conversation/job_answer.py) in the owner's chat, in the topic the job was
        made in (the chat's General once it is gone); left for the next look on a network error, a failed run
        when Telegram refuses it for good."""
        owner = self.settings.owner
        if owner is None:
            log.warning("jobs: %s cannot run (no owner chat); dropped", item.item_id)
            await asyncio.to_thread(self.inbox.complete, item.item_id)
            return
        chat_id = chat_of(item.conversation_id)

        async def deliver(text: str) -> bool:
            async def send(topic: int | None) -> None:
                await self.deliver(item, chat_id, text, None, None, topic)

            try:
                await or_general(send, topic_in(item.conversation_id, chat_id), f"job run {item.item_id}", resumes=True)
            except TelegramDeliveryError as err:
                if not refused_for_good(err.cause) and isinstance(err.cause, NetworkError):
                    log.warning("jobs: %s not delivered yet (%s); it is sent again at the next look", item.item_id, err)
                    return False  # stays in the inbox: the scheduler offers it again
                raise DeliveryRefused(f"Telegram refused it: {err.cause}") from None
            return True

        async def tell(text: str) -> None:
            try:
                await send_markdown(self.bot, owner, text)
            except (TelegramDeliveryError, TelegramError) as err:
                log.warning("jobs: could not tell the owner about %s: %s", item.item_id, err)

        await answer_job_run(
            self.runtime, self.pool, self.inbox, item, chat_id=chat_id, user_id=owner, deliver=deliver, tell=tell
        )


def joinable(message: telegram.Message) -> bool:
    """A turn later messages may join (busy modes): a text of a person's own, in a private chat."""
    return message.chat.type == "private" and message_kind(message) == "text" and outside_origin(message) is None


def outside_origin(message: telegram.Message) -> str | None:
    """Where a message's content comes from when it is not the sender's own words: ``"forwarded from
    Mallory"``, ``"forwarded from channel News"``, ``"sent via @somebot"``; None for the sender's own."""
    origin = message.forward_origin
    if origin is not None:
        user = getattr(origin, "sender_user", None)
        chat = getattr(origin, "sender_chat", None) or getattr(origin, "chat", None)
        if user is not None:
            who = user.full_name or "a user"
        elif chat is not None:
            who = f"{chat.type} {chat.title or chat.username or chat.id}"
        else:
            who = getattr(origin, "sender_user_name", None) or "someone"
        return f"forwarded from {_label(who)}"
    if message.is_automatic_forward:  # a channel post copied into its discussion group
        return "forwarded from the linked channel"
    if message.via_bot is not None:  # an inline bot wrote it; the user only picked it
        return f"sent via @{_label(message.via_bot.username or str(message.via_bot.id))}"
    return None


def _label(name: str) -> str:
    """A sender's name as it may stand in the outside-content label: one line, no brackets (names are theirs)."""
    return " ".join(str(name).replace("[", "(").replace("]", ")").split())[:80] or "someone"


def _excerpt(message: telegram.Message, limit: int = 60) -> str:
    """The start of a user's message, to name it in a log line."""
    text = " ".join((message.text or message.caption or f"<{message_kind(message)}>").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
