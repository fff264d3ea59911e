"""Sending to a Signal chat (conversation/chat_turns.py's ``Platform``): Markdown as styled parts in order, a file
or a voice note as one message's attachment, an approval's question (Signal has no buttons: a plain message,
answered by the owner's next one, conversation/approvals.py) and the "typing…" indicator."""

from __future__ import annotations

import asyncio
import base64
import mimetypes
from typing import Any

from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.format import render_signal, styles_of
from messaging_llm_bot.channels.signal.settings import SignalMessage, recipient_params
from messaging_llm_bot.conversation.attachments import sanitize_name
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.markup import MessagePart
from messaging_llm_bot.conversation.outage import Outage
from messaging_llm_bot.conversation.outgoing import Address, OutgoingFile, Sent, TextOut, send_parts
from messaging_llm_bot.conversation.typing_indicator import Typing

TYPING_EVERY_SECONDS = 10.0  # Signal clients drop a typing indicator after about 15 s


def quote_of(msg: SignalMessage) -> str:
    """How a reply names the message it quotes (``TextOut.reply_to``): its timestamp and author."""
    return f"{msg.timestamp}:{msg.uuid or msg.number}"


class SignalOut:
    """The sends through signal-cli: an ``Address`` is a number, a UUID or a group id; a message's id its
    timestamp. A daemon that is gone is said once per outage."""

    def __init__(self, client: SignalClient, outage: Outage) -> None:
        self.client, self.outage = client, outage

    async def send_text(self, to: Address, text: TextOut) -> Sent:
        """``text`` as Signal parts in order (conversation/outgoing.py's ``send_parts``), the first quoting
        ``text.reply_to`` (``quote_of``). Raises SignalRpcError/Unavailable."""

        async def send(_index: int, part: MessagePart, quote: str | None) -> str:
            params: dict[str, Any] = {**recipient_params(to.chat_id), "message": part.text}
            if styles := styles_of(part.entities):
                params["textStyle"] = styles
            if quote is not None:
                quoted, _, author = quote.partition(":")
                params.update(quoteTimestamp=int(quoted), quoteAuthor=author)
            result = await self.client.rpc("send", params)
            return str(int((result or {}).get("timestamp") or 0))

        with self.outage.watch(SignalUnavailable):
            return await send_parts(render_signal(text.markdown), text, send)

    async def edit_text(self, to: Address, message_id: str, markdown: str) -> bool:
        return False  # Signal cannot edit: a reply is sent whole when the turn ends

    async def send_file(self, to: Address, file: OutgoingFile) -> Sent:
        """The file as one message's attachment, its caption the message's text."""
        data = await asyncio.to_thread(file.path.read_bytes)
        mime = mimetypes.guess_type(file.path.name)[0] or "application/octet-stream"
        return Sent((await self.send_attachment(to.chat_id, data, mime, file.path.name, file.caption),))

    async def send_attachment(self, chat: str, data: bytes, mime: str, name: str, caption: str = "") -> str:
        """``data`` as one message's attachment, ``caption`` its text; the message's timestamp. signal-cli takes
        it as a data URI (signal-cli-jsonrpc(5): ``data:<type>;filename=<name>;base64,``)."""
        name = sanitize_name(name).replace(";", "_").replace(",", "_")  # inside the URI's parameters
        attachment = f"data:{mime};filename={name};base64,{base64.b64encode(data).decode('ascii')}"
        params = {**recipient_params(chat), "attachments": [attachment]}
        if caption:
            params["message"] = caption
        result = await self.client.rpc("send", params)
        return str((result or {}).get("timestamp") or "") if isinstance(result, dict) else ""

    async def ask(self, chat: str, text: str) -> None:
        """An approval's question as it is, no Markdown: it quotes the call's arguments."""
        try:
            await self.client.rpc("send", {**recipient_params(chat), "message": text})
        except (SignalRpcError, SignalUnavailable) as err:
            raise DeliveryError(str(err)) from err

    def typing(self, chat: str, enabled: bool, shown: bool) -> Typing:
        """ "typing…" in a chat while the model works (conversation/typing_indicator.py; best effort)."""

        async def send(on: bool) -> None:
            await self.client.rpc("sendTyping", {**recipient_params(chat), **({} if on else {"stop": True})})

        errors = (SignalRpcError, SignalUnavailable)
        return Typing(send, TYPING_EVERY_SECONDS, enabled=enabled, shown=shown, errors=errors, where=f"signal {chat}")
