"""Sending to a Signal chat: Markdown as styled parts in order (conversation/chat_turns.py's ``Platform``: a
reply, a short answer, a notice), an approval's question (conversation/approvals.py is the rest: Signal has no
buttons, so it is a plain message in the owner's direct chat, answered by their next message there) and the
"typing…" indicator."""

from __future__ import annotations

import asyncio
import logging
import mimetypes
from typing import Any

from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.format import SignalPart, render_signal
from messaging_llm_bot.channels.signal.media import send_attachment
from messaging_llm_bot.channels.signal.settings import SignalMessage, recipient_params
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.outage import Outage
from messaging_llm_bot.conversation.outgoing import Address, OutgoingFile, Sent, TextOut, send_parts
from messaging_llm_bot.conversation.typing_indicator import Typing

log = logging.getLogger(__name__)

TYPING_EVERY_SECONDS = 10.0  # Signal clients drop a typing indicator after about 15 s


def quote_of(msg: SignalMessage) -> str:
    """How a reply names the message it quotes (``TextOut.reply_to``): its timestamp and author."""
    return f"{msg.timestamp}:{msg.uuid or msg.number}"


async def send_markdown(client: SignalClient, chat: str, text: TextOut) -> Sent:
    """Send ``text`` as Signal parts in order (conversation/outgoing.py's ``send_parts``), the first quoting
    ``text.reply_to`` (``quote_of``); the ids are their timestamps. Raises SignalRpcError/Unavailable."""

    async def send(_index: int, part: SignalPart, quote: str | None) -> str:
        params: dict[str, Any] = {**recipient_params(chat), "message": part.text}
        if part.styles:
            params["textStyle"] = part.styles
        if quote is not None:
            quoted, _, author = quote.partition(":")
            params.update(quoteTimestamp=int(quoted), quoteAuthor=author)
        result = await client.rpc("send", params)
        return str(int((result or {}).get("timestamp") or 0))

    return await send_parts(render_signal(text.markdown), text, send)


class SignalOut:
    """The contract's sends through signal-cli (conversation/chat_turns.py's ``Platform``): an ``Address`` is a
    number, a UUID or a group id; a message's id its timestamp. A daemon that is gone is said once per outage."""

    def __init__(self, client: SignalClient, outage: Outage) -> None:
        self.client, self.outage = client, outage

    async def send_text(self, to: Address, text: TextOut) -> Sent:
        try:
            sent = await send_markdown(self.client, to.chat_id, text)
        except SignalUnavailable as err:
            self.outage.failed(err)
            raise
        self.outage.ok()
        return sent

    async def edit_text(self, to: Address, message_id: str, markdown: str) -> bool:
        return False  # Signal cannot edit: a reply is sent whole when the turn ends

    async def send_file(self, to: Address, file: OutgoingFile) -> Sent:
        """The file as one message's attachment, its caption the message's text."""
        data = await asyncio.to_thread(file.path.read_bytes)
        mime = mimetypes.guess_type(file.path.name)[0] or "application/octet-stream"
        return Sent((await send_attachment(self.client, to.chat_id, data, mime, file.path.name, file.caption),))


def approvals(client: SignalClient) -> ReplyApprovals:
    """The Signal bot's open questions, asked through ``client``."""

    async def send(chat: str, text: str) -> None:
        try:  # as it is, no Markdown: the question quotes the call's arguments
            await client.rpc("send", {**recipient_params(chat), "message": text})
        except (SignalRpcError, SignalUnavailable) as err:
            raise DeliveryError(str(err)) from err

    return ReplyApprovals("signal", send)


def typing(client: SignalClient, chat: str, enabled: bool = True, shown: bool = False) -> Typing:
    """Shows "typing…" in a chat while the model works (conversation/typing_indicator.py; best effort, never raises)."""

    async def send(on: bool) -> None:
        await client.rpc("sendTyping", {**recipient_params(chat), **({} if on else {"stop": True})})

    errors = (SignalRpcError, SignalUnavailable)
    return Typing(send, TYPING_EVERY_SECONDS, enabled=enabled, shown=shown, errors=errors, where=f"signal {chat}")
