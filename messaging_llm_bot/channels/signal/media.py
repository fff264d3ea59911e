"""Signal attachments: in, what conversation/media_in.py saves into the workspace or transcribes (their names and
kinds, fetched from signal-cli within Signal's limit); out, a file or a voice reply as one message's attachment.

signal-cli has already downloaded an attachment when the message event arrives; ``getAttachment``
returns it base64-encoded. The model gets where it was saved (untrusted content), never the bytes.
signal-cli takes an attachment to send as a data URI (signal-cli-jsonrpc(5): ``data:<type>;filename=<name>;base64,``).
"""

from __future__ import annotations

import base64
import binascii
import functools
from typing import Any

from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.settings import SignalMessage, attachment_kind, recipient_params
from messaging_llm_bot.conversation.attachments import sanitize_name
from messaging_llm_bot.conversation.media_in import FileIn

_EXT = {
    "audio/aac": "aac",
    "audio/mp4": "m4a",
    "audio/mpeg": "mp3",
    "audio/ogg": "ogg",
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/webp": "webp",
    "image/heic": "heic",
    "application/pdf": "pdf",
    "text/plain": "txt",
}


def attachment_name(att: dict[str, Any], msg: SignalMessage) -> str:
    """The file name to save under: the sender's name for it, else one made from kind and timestamp."""
    if att.get("filename"):
        return str(att["filename"])
    content = str(att.get("contentType") or "")
    ext = _EXT.get(content) or (
        str(att.get("id") or "").rpartition(".")[2] if "." in str(att.get("id") or "") else "bin"
    )
    return f"{attachment_kind(att)}-{msg.timestamp}.{ext}"


def files_of(client: SignalClient, msg: SignalMessage) -> list[FileIn]:
    """Every attachment of the message (one may carry several photos and files), the caption with the first,
    fetched from signal-cli when the turn reads them (conversation/media_in.py)."""
    return [
        FileIn(
            attachment_name(att, msg),
            attachment_kind(att),
            att.get("contentType"),
            att.get("size") if isinstance(att.get("size"), int) else None,
            functools.partial(fetch, client, att, msg),
            (msg.text or "") if index == 0 else "",
        )
        for index, att in enumerate(msg.attachments)
    ]


async def fetch(client: SignalClient, att: dict[str, Any], msg: SignalMessage, _limit: int) -> bytes | str:
    """The attachment's bytes (signal-cli has it already, whole), or an error text for the user."""
    params = {"id": att.get("id")}
    params.update({"groupId": msg.group_id} if msg.group_id else {"recipient": msg.sender})
    try:
        result = await client.rpc("getAttachment", params)
        return base64.b64decode(str((result or {}).get("data") or ""), validate=True)
    except (SignalRpcError, SignalUnavailable) as err:
        return f"Getting the file from signal-cli failed: {err}"
    except (binascii.Error, ValueError, AttributeError):
        return "signal-cli returned the file in a form I cannot read."


def audio_file_name(att: dict[str, Any]) -> str | None:
    """The (safe) file name of an audio attachment that is a file passed on, not a voice note.

    Signal marks no forwards; what it does tell apart: a voice note recorded in the chat travels
    without a file name, an audio file (a voicemail, a recording someone sent) keeps its name."""
    return sanitize_name(str(att["filename"])) if att.get("filename") else None


async def send_attachment(client: SignalClient, chat: str, data: bytes, mime: str, name: str, caption: str = "") -> str:
    """Send ``data`` to the chat as one message's attachment, ``caption`` its text; the message's timestamp.
    Raises ``SignalRpcError``/``SignalUnavailable``."""
    name = sanitize_name(name).replace(";", "_").replace(",", "_")  # inside the URI's parameters
    attachment = f"data:{mime};filename={name};base64,{base64.b64encode(data).decode('ascii')}"
    params = {**recipient_params(chat), "attachments": [attachment]}
    if caption:
        params["message"] = caption
    result = await client.rpc("send", params)
    return str((result or {}).get("timestamp") or "") if isinstance(result, dict) else ""
