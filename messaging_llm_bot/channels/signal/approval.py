"""Signal's part of approvals (conversation/approvals.py's ``ReplyApprovals`` is the rest): Signal has no
buttons, so the question is a plain message in the owner's direct chat, answered by their next message there."""

from __future__ import annotations

from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.settings import recipient_params
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.delivery import DeliveryError


def approvals(client: SignalClient) -> ReplyApprovals:
    """The Signal bot's open questions, asked through ``client``."""

    async def send(chat: str, text: str) -> None:
        try:  # as it is, no Markdown: the question quotes the call's arguments
            await client.rpc("send", {**recipient_params(chat), "message": text})
        except (SignalRpcError, SignalUnavailable) as err:
            raise DeliveryError(str(err)) from err

    return ReplyApprovals("signal", send)
