"""Signal's side of the shared chat turn (conversation/chat_turns.py): what the model reads of a message (its
attachments fetched from signal-cli), the read receipt and "typing…" while the model works, which send errors wait
in the inbox for a later try, a spoken reply's voice note.
"""

from __future__ import annotations

import base64
import binascii
import functools
import logging
from typing import Any

from assistant_framework.config.settings import SignalSettings
from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.channels.contract import Address, DeliveryError
from messaging_llm_bot.channels.signal.client import SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.format import CAPABILITIES
from messaging_llm_bot.channels.signal.identity import Identities
from messaging_llm_bot.channels.signal.send import SignalOut, quote_of
from messaging_llm_bot.channels.signal.settings import (
    PREFIX,
    SignalMessage,
    attachment_kind,
    attachment_name,
    model_text,
    parse_event,
    recipient_params,
)
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.attachments import sanitize_name, unsupported_text
from messaging_llm_bot.conversation.chat_turns import ChatTurns, Shows, TurnMessage
from messaging_llm_bot.conversation.item_turns import SendLater
from messaging_llm_bot.conversation.media_in import FileIn, files_saver, transcribe_file
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import Received
from messaging_llm_bot.conversation.voice import VoiceNote

log = logging.getLogger(__name__)


class SignalTurns(ChatTurns):
    """Runs turns for the Signal frontend (conversation/chat_turns.py); one instance per service."""

    platform: SignalOut
    SEND_ERRORS = (SignalUnavailable, DeliveryError)  # SignalRpcError is a DeliveryError
    MAX_FILE_BYTES = CAPABILITIES.max_file_bytes
    VOICE_REPLIES = True

    def __init__(
        self,
        runtime: Runtime,
        inbox: Inbox,
        platform: SignalOut,
        identities: Identities,
        approvals: ReplyApprovals | None = None,
    ) -> None:
        super().__init__(runtime, inbox, "signal")
        self.platform, self.identities, self.reply_approvals = platform, identities, approvals
        self.account_uuid: str | None = None

    @property
    def settings(self) -> SignalSettings:
        return self.runtime.settings.signal

    def address_of(self, conversation_id: str) -> Address:
        return Address(conversation_id.removeprefix(PREFIX))

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
        return self.platform.typing(msg.to.chat_id, self.settings.typing, shown)

    async def _receipt_and_typing(self, msg: SignalMessage) -> bool:
        """Mark the message read and show "typing…", in one batch request; True when typing went out."""
        calls: list[tuple[str, dict[str, Any] | None]] = [
            ("sendReceipt", {"recipient": msg.uuid or msg.number, "targetTimestamp": [msg.timestamp], "type": "read"})
        ]
        if self.settings.typing:
            calls.append(("sendTyping", recipient_params(msg.chat)))
        try:
            results = await self.platform.client.batch(calls)
        except SignalUnavailable as err:
            log.debug("signal: read receipt for %s failed: %s", msg.timestamp, err)
            return False
        for (method, _), result in zip(calls, results, strict=False):
            if isinstance(result, Exception):
                log.debug("signal: %s for %s failed: %s", method, msg.timestamp, result)
        return len(results) > 1 and not isinstance(results[1], Exception)

    def part_number(self, index: int, message_id: str) -> int:
        return int(message_id)  # the part's timestamp

    def send_failed(self, item: InboxItem, to: Address, err: Exception) -> bool:
        if isinstance(err, SignalRpcError) and err.transient:  # rate limited, the Signal server not reached
            raise SendLater(err) from err
        if isinstance(err, SignalUnavailable):  # said once per outage (SignalOut)
            raise SendLater(err, logged=True) from err
        return super().send_failed(item, to, err)  # refused (an unknown group, not a Signal user): given up

    async def say_to(self, msg: SignalMessage, text: str) -> None:
        """Answer ``msg`` in its chat with ``text`` (quoting it in a group), best effort: a failure is logged."""
        await self.say(Address(msg.chat), text, quote_of(msg) if msg.group_id else None)

    async def send_voice(self, to: Address, index: int, note: VoiceNote) -> None:
        await self.platform.send_attachment(to.chat_id, note.audio, "audio/ogg", f"reply-{index + 1}.ogg")

    def _received(self, msg: SignalMessage) -> Received:
        """What the model reads of ``msg``, by its kind (ChannelTurns.read): every attachment (one message may carry
        several photos and files; the caption with the first), fetched from signal-cli when the turn reads it."""
        kind = msg.kind()
        files = [
            FileIn(
                attachment_name(att, msg),
                attachment_kind(att),
                att.get("contentType"),
                att.get("size") if isinstance(att.get("size"), int) else None,
                functools.partial(self._fetch, att, msg),
                (msg.text or "") if index == 0 else "",
            )
            for index, att in enumerate(msg.attachments)
        ]
        save = files_saver(files, self.runtime.settings, limit=self.MAX_FILE_BYTES, source="signal-cli")
        # Signal marks no forwards, but a voice note recorded in the chat travels without a file name, and an audio
        # file passed on (a voicemail, someone's recording) keeps its own: someone else's words, quoted by the agent
        # under this label.
        name = msg.attachments[0].get("filename") if kind == "voice" else None
        return Received(
            kind,
            model_text(msg, self.settings.account, self.account_uuid) if kind == "text" else "",
            save,
            lambda config: transcribe_file(files[0], config, self.MAX_FILE_BYTES),
            lambda text: self.say_to(msg, text),  # the transcript, as it was understood
            f"Audio file {sanitize_name(str(name))} (transcript)" if name else None,
            unsupported_text(kind),
        )

    async def _fetch(self, att: dict[str, Any], msg: SignalMessage, limit: int) -> bytes | str:
        """The attachment's bytes (signal-cli downloaded it whole as the message came; ``getAttachment`` gives it
        base64-encoded), or an error text for the user. The model gets where it was saved, never the bytes."""
        params = {"id": att.get("id")}
        params.update({"groupId": msg.group_id} if msg.group_id else {"recipient": msg.sender})
        try:
            result = await self.platform.client.rpc("getAttachment", params, max_bytes=limit * 4 // 3 + 4096)
            return base64.b64decode(str((result or {}).get("data") or ""), validate=True)
        except (SignalRpcError, SignalUnavailable) as err:
            return f"Getting the file from signal-cli failed: {err}"
        except (binascii.Error, ValueError, AttributeError):
            return "signal-cli returned the file in a form I cannot read."


def joinable(msg: SignalMessage) -> bool:
    """A turn later messages may join (busy modes): a text in a direct chat."""
    return msg.group_id is None and msg.kind() == "text"
