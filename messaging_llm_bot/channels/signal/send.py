"""Sending to a Signal chat: Markdown as styled parts in order, a short answer to a message, a notice (the
rest is conversation/notices.py), an approval's question (conversation/approvals.py is the rest: Signal has no
buttons, so it is a plain message in the owner's direct chat, answered by their next message there) and the
"typing…" indicator."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.format import render_signal
from messaging_llm_bot.channels.signal.settings import SignalMessage, chat_of_conversation, recipient_params
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.typing_indicator import Typing

log = logging.getLogger(__name__)

TYPING_EVERY_SECONDS = 10.0  # Signal clients drop a typing indicator after about 15 s


async def send_parts(
    client: SignalClient,
    chat: str,
    markdown: str,
    *,
    quote: SignalMessage | None = None,
    skip_parts: int = 0,
    on_part_sent: Callable[[int, int], Awaitable[None]] | None = None,
) -> list[int]:
    """Send ``markdown`` as Signal parts in order; returns their timestamps. Raises SignalRpcError/Unavailable."""
    sent = []
    for index, part in enumerate(render_signal(markdown)):
        if index < skip_parts:
            continue
        params: dict[str, Any] = {**recipient_params(chat), "message": part.text}
        if part.styles:
            params["textStyle"] = part.styles
        if quote is not None and index == 0:
            params.update(quoteTimestamp=quote.timestamp, quoteAuthor=quote.uuid or quote.number)
        result = await client.rpc("send", params)
        stamp = int((result or {}).get("timestamp") or 0)
        sent.append(stamp)
        if on_part_sent is not None:
            await on_part_sent(index, stamp)
    return sent


async def say(client: SignalClient, msg: SignalMessage, text: str) -> None:
    """Answer ``msg`` in its chat with ``text`` (quoting it in a group), best effort: a failure is logged."""
    try:
        await send_parts(client, msg.chat, text, quote=msg if msg.group_id else None)
    except (SignalRpcError, SignalUnavailable) as err:
        log.info("signal: message to %s failed: %s", msg.chat, err)


async def send_to(client: SignalClient, chat_id: str, text: str, conversation: object = None) -> None:
    """Send a notice's Markdown to a chat (``sig:+49...``, a number, a UUID or a group id); ``DeliveryError`` when
    it did not arrive, for good when signal-cli refused it (not a Signal user, unknown group)."""
    try:
        await send_parts(client, chat_of_conversation(chat_id), text)
    except SignalRpcError as err:
        types = ", ".join(sorted(t for t in err.result_types if t))
        reason = f"signal-cli refused it: {err.message}" + (f" ({types})" if types else "")
        raise DeliveryError(reason if not err.transient else str(err), for_good=not err.transient) from err
    except SignalUnavailable as err:
        raise DeliveryError(str(err)) from err


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
        try:
            await client.rpc("sendTyping", {**recipient_params(chat), **({} if on else {"stop": True})})
        except (SignalRpcError, SignalUnavailable) as err:
            log.debug("signal: typing indicator in %s failed: %s", chat, err)

    return Typing(send, TYPING_EVERY_SECONDS, enabled=enabled, shown=shown)
