"""How a notice, a reminder or the digest reaches a Signal chat (conversation/notices.py is the rest)."""

from __future__ import annotations

from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.send import send_parts
from messaging_llm_bot.channels.signal.settings import chat_of_conversation
from messaging_llm_bot.conversation.delivery import DeliveryError


async def send_to(client: SignalClient, chat_id: str, text: str, conversation: object = None) -> None:
    """Send Markdown to a chat (``sig:+49...``, a number, a UUID or a group id); ``DeliveryError`` when it did
    not arrive, for good when signal-cli refused it (not a Signal user, unknown group)."""
    chat = chat_of_conversation(chat_id)
    try:
        await send_parts(client, chat, text)
    except SignalRpcError as err:
        types = ", ".join(sorted(t for t in err.result_types if t))
        reason = f"signal-cli refused it: {err.message}" + (f" ({types})" if types else "")
        raise DeliveryError(reason if not err.transient else str(err), for_good=not err.transient) from err
    except SignalUnavailable as err:
        raise DeliveryError(str(err)) from err
