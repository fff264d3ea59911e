"""The Matrix channel's side of the contract (channels/contract.py): text split to the limit, edits, typing,
files in and out through the media repository, and yes/no questions answered by a reply.

Every send carries a transaction id. For a reply it is derived from the reply's key (its inbox item) and the
part's index: the homeserver keeps one event per transaction id of a device, so a part sent again after a
crash (sent, but not yet in the ledger) is not a second message.
"""

from __future__ import annotations

import asyncio
import hashlib
import mimetypes
import secrets
from pathlib import Path

from messaging_llm_bot.channels.contract import (
    Address,
    Capabilities,
    DeliveryError,
    Media,
    MediaKind,
    OutgoingFile,
    Sent,
    TextOut,
)
from messaging_llm_bot.channels.matrix.client import MatrixClient, MatrixUnavailable
from messaging_llm_bot.channels.matrix.format import (
    CAPABILITIES,
    MatrixPart,
    MessageContent,
    Relation,
    edit_content,
    render_matrix,
    text_content,
)
from messaging_llm_bot.conversation.approvals import OpenQuestions, ReplyApprovals
from messaging_llm_bot.conversation.media_in import Download, too_large
from messaging_llm_bot.conversation.outgoing import send_parts

MAX_FILE_OUT_BYTES = CAPABILITIES.max_file_bytes
_MSGTYPE: dict[MediaKind, str] = {
    "photo": "m.image",
    "file": "m.file",
    "audio": "m.audio",
    "voice": "m.audio",
    "video": "m.video",
    "sticker": "m.image",
}


def txn_id(key: str, part: int | str) -> str:
    """A transaction id for part ``part`` of the reply ``key``; a random one without a key."""
    if not key:
        return f"r{secrets.token_hex(12)}"
    return "k" + hashlib.sha256(f"{key}\x00{part}".encode()).hexdigest()[:32]


def in_thread(content: MessageContent, to: Address, reply_to: str | None = None) -> MessageContent:
    """``content`` placed in ``to``'s thread (``m.thread``), or as a reply to ``reply_to`` outside threads."""
    relation: Relation
    if to.thread_id:
        relation = {"rel_type": "m.thread", "event_id": to.thread_id, "is_falling_back": True}
        relation["m.in_reply_to"] = {"event_id": reply_to or to.thread_id}
    elif reply_to:
        relation = {"m.in_reply_to": {"event_id": reply_to}}
    else:
        return content
    placed = content.copy()
    placed["m.relates_to"] = relation
    return placed


class MatrixChannel:
    """The contract's ``Channel`` over one logged-in ``MatrixClient``; called on the channel's event loop."""

    def __init__(self, client: MatrixClient, questions: OpenQuestions | None = None) -> None:
        self.client = client
        self.questions = questions or OpenQuestions()
        # The agent's ``ask`` approvals, answered by the owner's next message; same open questions as ask_yes_no.
        self.approvals = ReplyApprovals(
            "matrix", lambda room_id, text: self.send_question(Address(room_id), text), questions=self.questions
        )

    @property
    def name(self) -> str:
        return "matrix"

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    async def start(self) -> None:
        await self.client.login()

    async def stop(self, timeout: float) -> None:
        await self.client.close()

    async def send_text(self, to: Address, text: TextOut) -> Sent:
        async def send(index: int, part: MatrixPart, reply_to: str | None) -> str:
            # The same transaction id for the same part of the same reply: sent again after a crash, kept once.
            content = in_thread(text_content(part), to, reply_to)
            return await self.client.send(to.chat_id, content, txn_id(text.key, index))

        return await send_parts(render_matrix(text.markdown), text, send)

    async def edit_text(self, to: Address, message_id: str, markdown: str) -> bool:
        """Replace a sent message's text with the first part of ``markdown``; False when refused."""
        part = render_matrix(markdown)[0]
        try:
            await self.client.send(to.chat_id, edit_content(message_id, part), txn_id("", 0))
        except (DeliveryError, Exception):  # noqa: BLE001 - an edit is best effort: the reply still goes out
            return False
        return True

    async def typing(self, to: Address) -> None:
        await self.client.typing(to.chat_id, True)

    async def send_file(self, to: Address, file: OutgoingFile, key: str = "") -> Sent:
        size = await asyncio.to_thread(lambda: file.path.stat().st_size)
        if size > MAX_FILE_OUT_BYTES:
            raise DeliveryError(f"{file.path.name} is larger than {MAX_FILE_OUT_BYTES // 1_000_000} MB", for_good=True)
        data = await asyncio.to_thread(file.path.read_bytes)
        mime = mimetypes.guess_type(file.path.name)[0] or "application/octet-stream"
        url = await self.client.upload(data, mime, file.path.name)
        content: MessageContent = {
            "msgtype": _MSGTYPE[file.kind],
            "body": file.caption or file.path.name,
            "filename": file.path.name,
            "url": url,
            "info": {"mimetype": mime, "size": len(data)},
        }
        if file.kind == "voice":
            content["org.matrix.msc3245.voice"] = {}
        event_id = await self.client.send(to.chat_id, in_thread(content, to), txn_id(key, f"file:{file.path.name}"))
        return Sent((event_id,))

    async def download(self, media: Media, limit_bytes: int) -> Download | str:
        """The attachment's bytes, or a sentence for the user (too large, gone); the size the sender claims is
        checked first, the bytes read are bounded whatever it claimed."""
        if media.size is not None and media.size > limit_bytes:
            return too_large(media.size, limit_bytes)
        return await self.client.download(media.ref, limit_bytes)

    async def fetch(self, media: Media, folder: Path, limit_bytes: int) -> Path:
        got = await self.download(media, limit_bytes)
        if isinstance(got, str):
            raise DeliveryError(got, for_good=True)
        target = folder / (Path(media.name).name or "file")
        await asyncio.to_thread(target.write_bytes, got.data)
        return target

    async def ask_yes_no(self, to: Address, question: str, timeout: float) -> bool:
        """Ask in ``to``'s room; the owner's next "yes" or "no" there answers (``resolve``)."""
        content = in_thread(text_content(MatrixPart(question)), to)
        return await self.questions.ask_yes_no(
            to.chat_id, lambda: self.client.send(to.chat_id, content, txn_id("", 0)), timeout
        )

    def resolve(self, room_id: str, text: str) -> bool:
        """Answer an open question of ``room_id`` with ``text``; True when the message was that answer."""
        return self.approvals.resolve(room_id, text)

    async def send_question(self, to: Address, text: str) -> None:
        """An approval's question (or its timeout) in ``to``'s thread, one message; ``DeliveryError`` when it
        cannot go now."""
        try:
            await self.client.send(to.chat_id, in_thread(text_content(render_matrix(text)[0]), to), txn_id("", 0))
        except MatrixUnavailable as err:
            raise DeliveryError(str(err)) from err
