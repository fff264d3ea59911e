"""Answer one durable inbox item from Signal: run the Agent with a typing indicator, deliver with a ledger.

Used for live messages and for the start-up replay; the caller holds the chat's lock so the
messages of one chat are answered in order. A daemon that is gone while a reply waits is
retried with backoff (the reply is already in the inbox), until the bot stops.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING, Any

from assistant_framework.config.settings import SignalSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.signal import media
from messaging_llm_bot.channels.signal.client import Outage, SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.format import CAPABILITIES
from messaging_llm_bot.channels.signal.identity import Identities
from messaging_llm_bot.channels.signal.send import say, send_parts, typing
from messaging_llm_bot.channels.signal.settings import (
    SignalMessage,
    chat_of_conversation,
    model_text,
    parse_event,
    recipient_params,
)
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.attachments import unsupported_text
from messaging_llm_bot.conversation.files_out import file_sender
from messaging_llm_bot.conversation.images import FilesInput, files_input
from messaging_llm_bot.conversation.item_turns import ItemTurns, SendLater
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import Received, TurnRequest
from messaging_llm_bot.conversation.typing_indicator import Typing
from messaging_llm_bot.conversation.voice import VoiceNote

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from assistant_framework.memory.service import MemoryService

log = logging.getLogger(__name__)


class TurnRunner(ItemTurns):
    """Runs turns for the Signal frontend; one instance per service."""

    def __init__(
        self,
        runtime: Runtime,
        inbox: Inbox,
        client: SignalClient,
        settings_ref: Callable[[], SignalSettings],
        outage: Outage,
        identities: Identities,
        approvals: ReplyApprovals | None = None,
    ) -> None:
        super().__init__(runtime, inbox, "signal")
        self.client, self.outage = client, outage
        self.identities = identities
        self.approvals = approvals
        self._settings_ref = settings_ref
        self.account_uuid: str | None = None

    @property
    def settings(self) -> SignalSettings:
        return self._settings_ref()

    async def answer_job(self, item: InboxItem) -> None:
        """A job run in the owner's chat (conversation/job_answer.py): its reply through ``deliver``."""
        chat = chat_of_conversation(item.conversation_id)

        async def tell(text: str) -> None:
            try:
                await send_parts(self.client, chat, text)
            except (SignalRpcError, SignalUnavailable) as err:
                log.warning("jobs: could not tell the owner that the job of %s is paused: %s", item.item_id, err)

        await self.run_job(item, chat, lambda text: self.deliver(item, chat, text, None), tell)

    async def answer_message(self, item: InboxItem) -> None:
        msg = parse_event(item.payload)
        if msg is None:  # cannot happen for items this frontend wrote
            return await self.unreadable(item)
        quote = msg if msg.group_id else None  # quote the question only in groups
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []
        produced = reply is None  # answered in this run (a replay's reply was spoken, or not, before)
        if reply is None:
            shown = await self._receipt_and_typing(msg)
            shows = typing(self.client, msg.chat, self.settings.typing, shown=shown)
            produce = functools.partial(self._produce_reply, item, msg, shows)
            reply, merged, later = await self.make_reply(item, msg.sender, joinable(msg), produce, after=shows.stop)
        if not await self.deliver(item, msg.chat, reply, quote):
            return  # stopping with the reply undelivered: it stays in the inbox, resent at the next start
        if produced:
            await self._speak(item, msg, reply)
        await self.finish(item, merged, later)

    async def _speak(self, item: InboxItem, msg: SignalMessage, reply: str) -> None:
        """The reply as voice attachments too when the chat wants it (conversation/turn.py)."""

        async def send(index: int, note: VoiceNote) -> None:
            await media.send_attachment(self.client, msg.chat, note.audio, "audio/ogg", f"reply-{index + 1}.ogg")

        try:
            await self.speak(item.conversation_id, msg.kind() == "voice", reply, send)
        except (SignalRpcError, SignalUnavailable) as err:
            log.warning("signal: the voice reply in %s was not sent (the text was): %s", msg.chat, err)

    async def _receipt_and_typing(self, msg: SignalMessage) -> bool:
        """Mark the message read and show "typing…", in one batch request; True when typing went out."""
        calls: list[tuple[str, dict[str, Any] | None]] = [
            ("sendReceipt", {"recipient": msg.uuid or msg.number, "targetTimestamp": [msg.timestamp], "type": "read"})
        ]
        if self.settings.typing:
            calls.append(("sendTyping", recipient_params(msg.chat)))
        try:
            results = await self.client.batch(calls)
        except SignalUnavailable as err:
            log.debug("signal: read receipt for %s failed: %s", msg.timestamp, err)
            return False
        for (method, _), result in zip(calls, results, strict=False):
            if isinstance(result, Exception):
                log.debug("signal: %s for %s failed: %s", method, msg.timestamp, result)
        return len(results) > 1 and not isinstance(results[1], Exception)

    async def _produce_reply(self, item: InboxItem, msg: SignalMessage, shows: Typing) -> str:
        if msg.kind() in ("text", "document", "photo", "voice"):
            shows.start()  # fetching and transcribing take a while too
        sender = self.identities.judge(msg, self.settings)
        owner_chat = sender.owner_chat(msg)
        got = await self.read(item.conversation_id, owner_chat, self._received(msg))
        if isinstance(got, str):
            return got  # no file could be fetched or shown, no transcript, a kind not taken
        approve = None
        if self.approvals is not None and owner_chat:
            approve = self.approvals.approver(msg.chat, asyncio.get_running_loop())
        client, chat = self.client, msg.chat
        send_file = file_sender(
            self.runtime.workspace,
            item.item_id,
            asyncio.get_running_loop(),
            lambda one: media.send_workspace_file(client, chat, one),
            CAPABILITIES.max_file_bytes,
        )
        request = TurnRequest(
            item.conversation_id,
            got.text,
            chat_id=item.conversation_id,
            user_id=msg.sender,
            message_id=msg.timestamp,
            owner_chat=owner_chat,
            from_owner=sender.owner,
            untrusted=got.untrusted,
            outside=got.outside,
            images=got.images,
            notice=got.notice,
            send_file=send_file,
        )
        return await self.ask_agent(request, approve=approve)

    def _received(self, msg: SignalMessage) -> Received:
        """What the model reads of ``msg``, by its kind (ChannelTurns.read)."""
        kind = msg.kind()

        async def save(area: Workspace, today: date, index: MemoryService | None) -> FilesInput | str:
            saved = await media.save_attachments(self.client, area, msg, today)  # index: the owner's memory
            return await files_input(area, saved, self.runtime.settings, index=index)

        async def echo(text: str) -> None:  # the transcript, as it was understood
            await say(self.client, msg, text)

        # A recording from elsewhere, passed on: someone else's words, quoted by the agent under this label.
        name = media.audio_file_name(msg.attachments[0]) if kind == "voice" else None
        return Received(
            kind,
            model_text(msg, self.settings.account, self.account_uuid) if kind == "text" else "",
            save,
            lambda config: media.transcribe_voice(self.client, msg, config),
            echo,
            f"Audio file {name} (transcript)" if name is not None else None,
            unsupported_text(kind),
        )

    async def deliver(self, item: InboxItem, chat: str, reply: str, quote: SignalMessage | None) -> bool:
        """The one delivery path of chat turns and job runs : send the missing parts, each
        recorded in the ledger as it goes out; retries while the daemon is gone or cannot send for now (no network to
        the Signal server, rate limited). False when stopping first."""

        async def attempt() -> bool:
            skip = self.inbox.parts_sent(item.item_id)
            try:
                await send_parts(
                    self.client,
                    chat,
                    reply,
                    quote=quote if skip == 0 else None,
                    skip_parts=skip,
                    on_part_sent=lambda index, stamp: self.record_part(item.item_id, index, stamp),
                )
            except SignalRpcError as err:  # refused (unknown group, unregistered user): retrying cannot help
                raise (SendLater(err) if err.transient else DeliveryError(str(err), for_good=True)) from err
            except SignalUnavailable as err:
                self.outage.failed(err)  # said once per outage
                raise SendLater(err, logged=True) from err
            self.outage.ok()
            return True

        return await self.deliver_until(item, chat, attempt)


def joinable(msg: SignalMessage) -> bool:
    """A turn later messages may join (busy modes): a text in a direct chat."""
    return msg.group_id is None and msg.kind() == "text"
