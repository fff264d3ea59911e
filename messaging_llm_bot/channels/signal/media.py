"""Signal attachments: in, documents and photos saved into the workspace and voice notes transcribed; out, a
file or a voice reply as one message's attachment.

signal-cli has already downloaded an attachment when the message event arrives; ``getAttachment``
returns it base64-encoded. The model gets where it was saved (untrusted content), never the bytes.
signal-cli takes an attachment to send as a data URI (signal-cli-jsonrpc(5): ``data:<type>;filename=<name>;base64,``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from datetime import date
from typing import Any

from assistant_framework.config.settings import TranscriptionSettings
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.settings import SignalMessage, attachment_kind, recipient_params
from messaging_llm_bot.conversation.attachments import SavedFile, sanitize_name, save_bytes
from messaging_llm_bot.llm.transcribe import Transcription, transcribe

MAX_ATTACHMENT_BYTES = 100 * 1024 * 1024  # Signal's own attachment limit
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


async def fetch(client: SignalClient, att: dict[str, Any], msg: SignalMessage) -> bytes | str:
    """The attachment's bytes, or an error text for the user."""
    size = att.get("size")
    if isinstance(size, int) and size > MAX_ATTACHMENT_BYTES:
        return f"That file is {size / 1e6:.1f} MB; I take at most {MAX_ATTACHMENT_BYTES // 1_000_000} MB."
    params = {"id": att.get("id")}
    params.update({"groupId": msg.group_id} if msg.group_id else {"recipient": msg.sender})
    try:
        result = await client.rpc("getAttachment", params)
        return base64.b64decode(str((result or {}).get("data") or ""), validate=True)
    except (SignalRpcError, SignalUnavailable) as err:
        return f"Getting the file from signal-cli failed: {err}"
    except (binascii.Error, ValueError, AttributeError):
        return "signal-cli returned the file in a form I cannot read."


async def save_attachments(
    client: SignalClient, ws: Workspace, msg: SignalMessage, today: date
) -> list[SavedFile | str]:
    """Save every attachment of the message into ``inbox/<today>/`` (one message may carry several
    photos and files); per attachment the saved file or an error text. The caption goes with the first."""
    out: list[SavedFile | str] = []
    for index, att in enumerate(msg.attachments):
        data = await fetch(client, att, msg)
        if isinstance(data, str):
            out.append(data)
            continue
        out.append(
            await asyncio.to_thread(
                save_bytes,
                ws,
                data,
                attachment_name(att, msg),
                today,
                kind=attachment_kind(att),
                mime_type=att.get("contentType"),
                caption=(msg.text or "") if index == 0 else "",
            )
        )
    return out


def audio_file_name(att: dict[str, Any]) -> str | None:
    """The (safe) file name of an audio attachment that is a file passed on, not a voice note.

    Signal marks no forwards; what it does tell apart: a voice note recorded in the chat travels
    without a file name, an audio file (a voicemail, a recording someone sent) keeps its name."""
    return sanitize_name(str(att["filename"])) if att.get("filename") else None


async def transcribe_voice(client: SignalClient, msg: SignalMessage, settings: TranscriptionSettings) -> Transcription:
    """Fetch a voice note and send it to the configured transcription endpoint."""
    att = msg.attachments[0]
    data = await fetch(client, att, msg)
    if isinstance(data, str):
        return Transcription(error=data)
    content = str(att.get("contentType") or "audio/aac")
    return await asyncio.to_thread(transcribe, settings, data, attachment_name(att, msg), content)


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
