"""A chat message's turn and its reply's way out, once for every channel that answers its inbox items
(docs/channels.md, "The life of a message").

``ChatTurns.answer_message`` runs it: a notice item's text sent as it is; else the channel's reading of the
item (``TurnMessage``: where the reply goes, who wrote, what the model reads), the typing or the live message
while the model works (conversation/progress.py: streaming by edits where the platform can edit, else one
final message), the owner's approvals, the ``send_file`` skill's files into the chat, the agent's call, the
reply made once in the busy turn (``ItemTurns.make_reply``), then delivered through the ledger: the parts not
recorded yet, each recorded as it goes out, the live message (a streamed answer, a status line the platform
cannot delete, or one a crash left) edited into the first part; the spoken reply where the chat asked for one;
the items completed. A job run's reply goes out the same way (``answer_job``).

The channel gives what is the platform's: reading its item, its live message or typing (``shows``), its
sends (the contract's ``send_text``, ``edit_text``, ``send_file``: ``Platform``), which of its errors are
worth a later try (``send_failed``), its approver, a voice note's send.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from assistant_framework.inbox import InboxItem
from assistant_framework.media.files_out import FileSender, FileToSend
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.files_out import file_sender
from messaging_llm_bot.conversation.item_turns import ItemTurns, SendLater, is_notice_item
from messaging_llm_bot.conversation.job_runs import is_job_item
from messaging_llm_bot.conversation.markup import fit_text
from messaging_llm_bot.conversation.outgoing import Address, OutgoingFile, Sent, TextOut
from messaging_llm_bot.conversation.progress import LiveMessage, Progress
from messaging_llm_bot.conversation.turn import Received, TurnInput, TurnRequest
from messaging_llm_bot.conversation.typing_indicator import Typing
from messaging_llm_bot.conversation.voice import VoiceNote

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from messaging_llm_bot.agent.guard import ApproveCallback

log = logging.getLogger(__name__)

#: What the model reads of a message when the channel reads it itself (an attachment fetched by its handle,
#: conversation/media_in.py): the input, or the sentence that answers instead.
ReadInput = Callable[[], Awaitable[TurnInput | str]]


class Platform(Protocol):
    """The contract's sends (channels/contract.py's ``Channel``) that the shared turn uses."""

    async def send_text(self, to: Address, text: TextOut) -> Sent:
        """The reply's parts from ``text.skip_parts`` on, each reported to ``text.on_part_sent``."""
        ...

    async def edit_text(self, to: Address, message_id: str, markdown: str) -> bool:
        """A sent message replaced by ``markdown``'s first part (as ``send_text`` splits it); False when it
        did not take (the reply is then sent whole), or raises like ``send_text``."""
        ...

    async def send_file(self, to: Address, file: OutgoingFile) -> Sent: ...


@dataclass(frozen=True)
class TurnMessage:
    """One chat message as the channel read it from its inbox item, for the shared turn."""

    to: Address  # where the reply goes (the chat, and its thread or forum topic)
    sender: int | str | None  # who wrote it, as the agent's records name them (busy modes join their messages)
    owner_chat: bool  # the owner's own one-to-one chat: the only one that sees the owner's data
    from_owner: bool  # the owner wrote it (in any chat): their model calls go first
    received: Received | ReadInput  # what the model reads of it (ChannelTurns.read), or the channel's own read
    message_id: int | str | None  # the platform's id of the message, as the agent's records show it
    joinable: bool = False  # a turn later messages of the same person may join (busy modes)
    chat_id: int | str | None = None  # the platform's chat for the agent's records; None: the conversation's id
    reply_to: str | None = None  # the message the reply's first part quotes (in groups)
    voice: bool = False  # a voice note: the chat may want the reply spoken too
    also: tuple[str, ...] = ()  # items answered with it and completed with it (the rest of an album)


#: What shows the model is working: the live message (status, streamed answer) or typing alone.
Shows = Progress | Typing


class ChatTurns(ItemTurns):
    """The turn runner of a channel whose messages run the shared turn; the channel sets ``platform``."""

    platform: Platform
    #: The errors the platform's sends raise: sorted by ``send_failed`` in a delivery, logged by ``say``.
    SEND_ERRORS: ClassVar[tuple[type[Exception], ...]] = (DeliveryError,)
    #: The largest file the ``send_file`` skill may send (the channel's ``Capabilities.max_file_bytes``).
    MAX_FILE_BYTES: ClassVar[int] = 0
    #: The reply is spoken too where the chat asks for it (``send_voice``).
    VOICE_REPLIES: ClassVar[bool] = False
    #: The owner's yes or no by their next message, where the platform has no buttons (the default ``approver``).
    reply_approvals: ReplyApprovals | None = None

    # -- what the channel gives ------------------------------------------------------------------------------

    def message(self, item: InboxItem) -> TurnMessage | None:
        """The message ``item`` holds, read for the turn; None for an item this channel did not write."""
        raise NotImplementedError

    def sent_by_owner(self, item: InboxItem) -> bool:
        """Whether the owner sent the message ``item`` holds (``ChannelIntake.replay``: first for a free slot); a
        notice's item, made for the owner, counts as theirs."""
        if is_notice_item(item):
            return True
        msg = self.message(item)
        return msg is not None and msg.from_owner

    def address_of(self, conversation_id: str) -> Address:
        """Where a conversation's replies go without a message to answer (a job run, a notice)."""
        raise NotImplementedError

    def job_chat(self, to: Address) -> int | str | None:
        """The chat of a job run in ``to`` as the agent's records name it (``TurnMessage.chat_id``); None: the
        conversation's id."""
        return None

    async def shows(self, item: InboxItem, msg: TurnMessage) -> Shows | None:
        """Typing, or the live message (``live_progress``), while the model works on ``msg``."""
        return None

    def approver(self, item: InboxItem, msg: TurnMessage, loop: asyncio.AbstractEventLoop) -> ApproveCallback | None:
        """How the owner confirms an ``ask`` call in their chat (asked only there); None: refused."""
        return None if self.reply_approvals is None else self.reply_approvals.approver(msg.to.chat_id, loop)

    def live_ref(self, number: int) -> str:
        """The platform's id of a live message the ledger recorded as ``number``."""
        return str(number)

    def part_number(self, index: int, message_id: str) -> int:
        """What the ledger records of a part that went out (the platform's id where it is a number)."""
        return index + 1

    def send_failed(self, item: InboxItem, to: Address, err: Exception) -> bool:
        """One of ``SEND_ERRORS`` raised by a try at delivering ``item``: ``DeliveryError`` given up, the rest
        tried again later (``SendLater``); a channel returns False to leave the item in the inbox (held)."""
        if isinstance(err, DeliveryError):
            raise err
        raise SendLater(err, after=float(getattr(err, "retry_after", 0.0) or 0.0)) from err

    async def edit_live(self, item: InboxItem, to: Address, live: str, reply: str) -> bool:
        """The live message ``live`` made the reply's first part (``Platform.edit_text``)."""
        return await self.platform.edit_text(to, live, reply)

    def may_have_left_live(self, item: InboxItem) -> bool:
        """Whether a kill may have left ``item``'s live message unrecorded (sent, its record not written): a
        message an earlier process took, no live message and no part in the ledger. A channel whose platform
        keeps one message per id the client gives (Matrix's transaction ids, Discord's nonces) takes it over by
        that id before the reply goes out."""
        return (
            self.inbox.left_by_earlier_run(item)
            and item.live is None
            and not self.inbox.parts_sent(item.item_id)
            and not is_notice_item(item)
            and self.message(item) is not None
        )

    async def not_taken(self, to: Address, live: str) -> None:
        """The live message could not become the reply's first part (the reply is sent whole after it)."""

    async def send_voice(self, to: Address, index: int, note: VoiceNote) -> None:
        """One voice note of a spoken reply (``VOICE_REPLIES``); raises one of ``SEND_ERRORS``."""
        raise NotImplementedError

    async def send_workspace_file(self, item: InboxItem, to: Address, one: FileToSend) -> str:
        """A file of the ``send_file`` skill (its ledger: media/files_out.py); the message's id."""
        sent = await self.platform.send_file(to, OutgoingFile("photo" if one.photo else "file", one.path, one.caption))
        return sent.message_ids[0]

    # -- the shared turn -------------------------------------------------------------------------------------

    def live_progress(
        self,
        item: InboxItem,
        live: LiveMessage,
        *,
        stream: bool,
        edit_interval: float,
        show_status: bool = True,
        typing: Typing | None = None,
    ) -> Progress:
        """Progress by edits of ``live`` (at most one per ``edit_interval`` seconds): the message a crashed run
        left taken over, a new one recorded; ``typing`` where the platform's indicator is a repeated request."""
        return Progress(
            live,
            show_status=show_status,
            stream=stream,
            edit_interval=edit_interval,
            message_id=item.live,
            on_message=lambda number: self.record_live(item.item_id, number),
            typing=typing,
        )

    async def answer_message(self, item: InboxItem) -> None:
        if is_notice_item(item):  # a notice the bot sends on its own: its text is the recorded reply
            if await self.deliver(item, self.address_of(item.conversation_id), item.reply or ""):
                await asyncio.to_thread(self.inbox.complete, item.item_id)
            return
        msg = self.message(item)
        if msg is None:  # cannot happen for items this channel wrote
            return await self.unreadable(item)
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []  # offered to the turn too late: each answered in its own turn after it
        # A live message a crashed run left (the ledger's record) is taken over: edited, never left beside another.
        live = self.live_ref(item.live) if item.live is not None else None
        produced = reply is None  # answered in this run (a replay's reply was spoken, or not, before)
        if reply is None:
            shows = await self.shows(item, msg)
            reply, merged, later = await self.make_reply(
                item, msg.sender, msg.joinable, lambda: self._turn(item, msg, shows), after=self._stopper(shows)
            )
            live = await self._handover(shows)
        if not await self.deliver(item, msg.to, reply, live, msg.reply_to):
            return  # stopping, or held: it and the messages it answers stay in the inbox
        if produced and self.VOICE_REPLIES:
            await self._speak(item, msg, reply)
        # The reply is out, its parts in the ledger: the chat's next message need not wait for the files to go.
        await self.finish(item, [*merged, *msg.also], later, beside_next=True)

    @staticmethod
    def _stopper(shows: Shows | None) -> Callable[[], Awaitable[None]] | None:
        return shows.stop if shows is not None else None

    async def _handover(self, shows: Shows | None) -> str | None:
        """The live message the reply's first part goes into: the streamed answer, or a status line where the
        platform cannot delete it (``LiveMessage.delete`` returns False); a status line is deleted."""
        if not isinstance(shows, Progress) or shows.message_id is None:
            return None
        if not shows.showing_stream and await shows.discard():
            return None
        return self.live_ref(shows.message_id)

    async def _turn(self, item: InboxItem, msg: TurnMessage, shows: Shows | None) -> str:
        if isinstance(shows, Progress):
            await shows.start()
        elif shows is not None:
            shows.start()  # fetching and transcribing take a while too
        if isinstance(msg.received, Received):
            got = await self.read(item.conversation_id, msg.owner_chat, msg.received)
        else:
            got = await msg.received()
        if isinstance(got, str):
            return got  # not fetched, too large, unreadable, no transcript, a kind not taken: one sentence
        loop = asyncio.get_running_loop()
        request = TurnRequest(
            item.conversation_id,
            got.text,
            chat_id=item.conversation_id if msg.chat_id is None else msg.chat_id,
            user_id=msg.sender,
            message_id=msg.message_id,
            owner_chat=msg.owner_chat,
            from_owner=msg.from_owner,
            untrusted=got.untrusted,
            outside=got.outside,
            images=got.images,
            notice=got.notice,
            send_file=self.files_to(item, msg.to, loop),
        )
        approve = self.approver(item, msg, loop) if msg.owner_chat else None  # elsewhere "ask" means no
        on_event = shows.on_event if isinstance(shows, Progress) else None
        return await self.ask_agent(request, approve=approve, on_event=on_event)

    def files_to(self, item: InboxItem, to: Address, loop: asyncio.AbstractEventLoop) -> FileSender:
        """The turn's ``send_file``: files into ``to``, once per item (a restart answering it sends none again)."""
        send = self.send_workspace_file
        return file_sender(
            self.runtime.workspace, item.item_id, loop, lambda one: send(item, to, one), self.MAX_FILE_BYTES
        )

    async def _speak(self, item: InboxItem, msg: TurnMessage, reply: str) -> None:
        """The reply as voice notes too when the chat wants it (``ChannelTurns.speak``)."""
        try:
            await self.speak(item.conversation_id, msg.voice, reply, lambda i, note: self.send_voice(msg.to, i, note))
        except self.SEND_ERRORS as err:
            log.warning("%s: the voice reply in %s was not sent (the text was): %s", self.channel, msg.to.chat_id, err)

    async def send_reply(
        self, item: InboxItem, to: Address, reply: str, live: str | None = None, reply_to: str | None = None
    ) -> None:
        """One try at the reply's parts the ledger does not have, each recorded as it goes out; ``live``, when
        nothing is out yet, edited into the first part. Raises the platform's errors."""

        async def on_part_sent(index: int, message_id: str) -> None:
            await self.record_part(item.item_id, index, self.part_number(index, message_id))

        skip = self.inbox.parts_sent(item.item_id)
        if skip == 0 and live is not None:
            if await self.edit_live(item, to, live, reply):
                await on_part_sent(0, live)
                skip = 1
            else:
                await self.not_taken(to, live)
        first = reply_to if skip == 0 else None
        await self.platform.send_text(to, TextOut(reply, first, skip, on_part_sent, item.item_id))

    async def deliver(
        self, item: InboxItem, to: Address, reply: str, live: str | None = None, reply_to: str | None = None
    ) -> bool:
        """The one delivery path of chat turns, job runs and notices (``send_reply`` until it is out, through
        ``ItemTurns.deliver_until``); False when stopping first, or held (the item stays in the inbox)."""

        async def attempt() -> bool:
            try:
                await self.send_reply(item, to, reply, live, reply_to)
            except self.SEND_ERRORS as err:
                return self.send_failed(item, to, err)
            return True

        return await self.deliver_until(item, to.chat_id, attempt)

    async def say(self, to: Address, text: str, reply_to: str | None = None) -> None:
        """A short text (quoting ``reply_to``), best effort: a failure is logged."""
        try:
            await self.platform.send_text(to, TextOut(text, reply_to))
        except self.SEND_ERRORS as err:
            log.info("%s: could not say %r in %s: %s", self.channel, text[:40], to.chat_id, err)

    async def send_to(self, chat_id: str, text: str, conversation: object = None) -> None:
        """A notice's or a reminder's Markdown into ``chat_id``, in ``conversation``'s thread or forum topic when it
        is one of that chat's (where the reminder was set), not through the inbox (conversation/notices.py's
        ``SendTo``); ``DeliveryError`` when it did not arrive (``undelivered``), for good when ``chat_id`` is no
        chat of this channel."""
        try:
            to = self.address_of(chat_id)
        except ValueError:
            raise DeliveryError(
                f"{chat_id!r} is not a {self.PLATFORM or self.channel} chat id", for_good=True
            ) from None
        with contextlib.suppress(ValueError):  # a conversation of another form: the chat itself
            place = self.address_of(str(conversation)) if conversation else to
            to = place if place.chat_id == to.chat_id else to
        try:
            await self.platform.send_text(to, TextOut(text))
        except self.SEND_ERRORS as err:
            raise self.undelivered(err) from err

    def undelivered(self, err: Exception) -> DeliveryError:
        """What a notice's failed send (one of ``SEND_ERRORS``) tells conversation/notices.py: by default to try
        again later, unless the channel's ``DeliveryError`` says it is for good."""
        return DeliveryError(str(err), for_good=isinstance(err, DeliveryError) and err.for_good)

    def said(self, item: InboxItem) -> str:
        msg = None if is_notice_item(item) or is_job_item(item) else self.message(item)
        if msg is None or not isinstance(msg.received, Received):
            return ""
        return fit_text(" ".join(msg.received.text.split()) or f"<{msg.received.kind}>", 60)

    async def answer_job(self, item: InboxItem) -> None:
        """A job run answered once (``ItemTurns.run_job``: dropped when the channel has no owner now) in its
        conversation, delivered like a reply."""
        to = self.address_of(item.conversation_id)
        deliver = functools.partial(self.deliver, item, to)
        await self.run_job(item, deliver, functools.partial(self.say, to), self.job_chat(to))
