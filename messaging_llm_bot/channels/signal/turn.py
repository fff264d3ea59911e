"""Answer one durable inbox item from Signal on conversation/chat_turns.py's turn: the read receipt and "typing…"
while the model works, the reply delivered through the ledger, spoken where the chat asks for it.

Used for live messages and for the start-up replay; the caller holds the chat's lock so the
messages of one chat are answered in order. A daemon that is gone while a reply waits is
retried with backoff (the reply is already in the inbox), until the bot stops.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from assistant_framework.config.settings import SignalSettings
from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.channels.contract import Address, DeliveryError
from messaging_llm_bot.channels.signal import media
from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.format import CAPABILITIES
from messaging_llm_bot.channels.signal.identity import Identities
from messaging_llm_bot.channels.signal.send import SignalOut, quote_of, typing
from messaging_llm_bot.channels.signal.settings import (
    SignalMessage,
    chat_of_conversation,
    model_text,
    parse_event,
    recipient_params,
)
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.attachments import unsupported_text
from messaging_llm_bot.conversation.chat_turns import ChatTurns, Shows, TurnMessage
from messaging_llm_bot.conversation.item_turns import SendLater
from messaging_llm_bot.conversation.media_in import files_saver, transcribe_file
from messaging_llm_bot.conversation.outage import Outage
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import Received
from messaging_llm_bot.conversation.voice import VoiceNote

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from messaging_llm_bot.agent.guard import ApproveCallback

log = logging.getLogger(__name__)


class SignalTurns(ChatTurns):
    """Runs turns for the Signal frontend (conversation/chat_turns.py); one instance per service."""

    platform: SignalOut
    SEND_ERRORS = (SignalRpcError, SignalUnavailable, DeliveryError)
    MAX_FILE_BYTES = CAPABILITIES.max_file_bytes
    VOICE_REPLIES = True

    def __init__(
        self,
        runtime: Runtime,
        inbox: Inbox,
        client: SignalClient,
        outage: Outage,
        identities: Identities,
        approvals: ReplyApprovals | None = None,
    ) -> None:
        super().__init__(runtime, inbox, "signal")
        self.client, self.outage = client, outage
        self.platform = SignalOut(client, outage)
        self.identities = identities
        self.approvals = approvals
        self.account_uuid: str | None = None

    @property
    def settings(self) -> SignalSettings:
        return self.runtime.settings.signal

    def address_of(self, conversation_id: str) -> Address:
        return Address(chat_of_conversation(conversation_id))

    def message(self, item: InboxItem) -> TurnMessage | None:
        msg = parse_event(item.payload)
        if msg is None:
            return None
        sender = self.identities.judge(msg, self.settings)
        return TurnMessage(
            Address(msg.chat),
            msg.sender,
            sender.owner_chat(msg),
            sender.owner,
            self._received(msg),
            msg.timestamp,
            joinable(msg),
            reply_to=quote_of(msg) if msg.group_id else None,  # quote the question only in groups
            voice=msg.kind() == "voice",
        )

    async def shows(self, item: InboxItem, msg: TurnMessage) -> Shows:
        """The read receipt and "typing…" in one batch request, then typing while the model works."""
        signal = parse_event(item.payload)
        shown = signal is not None and await self._receipt_and_typing(signal)
        return typing(self.client, msg.to.chat_id, self.settings.typing, shown=shown)

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

    def approver(self, item: InboxItem, msg: TurnMessage, loop: asyncio.AbstractEventLoop) -> ApproveCallback | None:
        return self.approvals.approver(msg.to.chat_id, loop) if self.approvals is not None else None

    def part_number(self, index: int, message_id: str) -> int:
        return int(message_id)  # the part's timestamp

    def send_failed(self, item: InboxItem, to: Address, err: Exception) -> bool:
        if isinstance(err, SignalRpcError):  # refused (unknown group, unregistered user): retrying cannot help
            raise (SendLater(err) if err.transient else DeliveryError(str(err), for_good=True)) from err
        if isinstance(err, SignalUnavailable):  # said once per outage (SignalOut)
            raise SendLater(err, logged=True) from err
        return super().send_failed(item, to, err)

    def undelivered(self, err: Exception) -> DeliveryError:
        if isinstance(err, SignalRpcError) and not err.transient:  # not a Signal user, an unknown group
            types = ", ".join(sorted(t for t in err.result_types if t))
            return DeliveryError(
                f"signal-cli refused it: {err.message}" + (f" ({types})" if types else ""), for_good=True
            )
        return super().undelivered(err)

    async def say_to(self, msg: SignalMessage, text: str) -> None:
        """Answer ``msg`` in its chat with ``text`` (quoting it in a group), best effort: a failure is logged."""
        await self.say(Address(msg.chat), text, quote_of(msg) if msg.group_id else None)

    async def send_voice(self, to: Address, index: int, note: VoiceNote) -> None:
        await media.send_attachment(self.client, to.chat_id, note.audio, "audio/ogg", f"reply-{index + 1}.ogg")

    def _received(self, msg: SignalMessage) -> Received:
        """What the model reads of ``msg``, by its kind (ChannelTurns.read)."""
        kind, files = msg.kind(), media.files_of(self.client, msg)
        save = files_saver(files, self.runtime.settings, limit=self.MAX_FILE_BYTES, source="signal-cli")
        # A recording from elsewhere, passed on: someone else's words, quoted by the agent under this label.
        name = media.audio_file_name(msg.attachments[0]) if kind == "voice" else None
        return Received(
            kind,
            model_text(msg, self.settings.account, self.account_uuid) if kind == "text" else "",
            save,
            lambda config: transcribe_file(files[0], config, self.MAX_FILE_BYTES),
            lambda text: self.say_to(msg, text),  # the transcript, as it was understood
            f"Audio file {name} (transcript)" if name is not None else None,
            unsupported_text(kind),
        )


def joinable(msg: SignalMessage) -> bool:
    """A turn later messages may join (busy modes): a text in a direct chat."""
    return msg.group_id is None and msg.kind() == "text"
