"""Files out on Signal (the ``send_file`` skill): the file as an attachment of one message, with the caption
as its text; signal-cli takes it as a data URI (signal-cli-jsonrpc(5): ``data:<type>;filename=<name>;base64,``)."""

from __future__ import annotations

import asyncio
import base64
import mimetypes

from assistant_framework.media.files_out import FileToSend
from messaging_llm_bot.channels.signal.client import SignalClient
from messaging_llm_bot.channels.signal.settings import recipient_params
from messaging_llm_bot.conversation.attachments import sanitize_name


async def send_workspace_file(client: SignalClient, chat: str, one: FileToSend) -> str:
    """Send ``one`` to the chat; the message's timestamp. Raises ``SignalRpcError``/``SignalUnavailable``."""
    data = await asyncio.to_thread(one.path.read_bytes)
    kind = mimetypes.guess_type(one.path.name)[0] or "application/octet-stream"
    # The name goes inside the URI's parameters: no ";" or "," in it.
    name = sanitize_name(one.path.name).replace(";", "_").replace(",", "_")
    attachment = f"data:{kind};filename={name};base64,{base64.b64encode(data).decode('ascii')}"
    params = {**recipient_params(chat), "attachments": [attachment]}
    if one.caption:
        params["message"] = one.caption
    result = await client.rpc("send", params)
    return str((result or {}).get("timestamp") or "") if isinstance(result, dict) else ""
