"""The Discord channel's side of the contract (channels/contract.py): text split to 2,000 characters and sent to
the conversation's channel, edited in place, typing shown, yes/no questions answered by a reply
(conversation/approvals.py's ``ReplyApprovals``). An ``Address``'s chat is the Discord channel's id (a DM, a
guild channel or a thread).

Every part of a reply, a file of a turn and the first live message carries a nonce made from its reply's key (its
inbox item) and the part (``nonce``), with ``enforce_nonce`` (discord.py sends it with every nonce): Discord
creates one message per nonce of an author within a few minutes and answers a repeat with the message it made, so
a part sent again after a crash (out, but not yet in the ledger) is not a second message. Without a key (a short
text, a question) the nonce is random: discord.py's own retries of that send are still one message.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import secrets
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from messaging_llm_bot.channels.contract import (
    Address,
    Capabilities,
    DeliveryError,
    Media,
    OutgoingFile,
    Sent,
    TextOut,
)
from messaging_llm_bot.channels.discord.api import DiscordUnavailable, call, messageable
from messaging_llm_bot.channels.discord.buttons import HOW_TO_ANSWER, HOW_TO_ANSWER_OR_ALLOW, question_view
from messaging_llm_bot.channels.discord.files import download
from messaging_llm_bot.channels.discord.format import CAPABILITIES, MAX_FILE_BYTES, MAX_TEXT_CHARS, split
from messaging_llm_bot.channels.discord.settings import channel_of, conversation_of
from messaging_llm_bot.conversation.approvals import NO_ANSWER, ReplyApprovals
from messaging_llm_bot.conversation.outgoing import send_parts

if TYPE_CHECKING:
    import discord

#: Discord takes a nonce of at most 25 characters.
NONCE_CHARS = 25


def nonce(key: str, part: int | str) -> str:
    """The nonce of part ``part`` of the reply (or turn) ``key``: the same after a restart; a random one without a
    key (the library's own retries of that send are still one message)."""
    if not key:
        return secrets.token_hex(12)
    return hashlib.sha256(f"{key}\x00{part}".encode()).hexdigest()[:NONCE_CHARS]


class DiscordChannel:
    """The contract's ``Channel`` over one logged-in ``discord.Client``; called on the channel's event loop."""

    def __init__(self, client: discord.Client, base_url: str, owner: Callable[[], str | None] = lambda: None) -> None:
        self.client = client
        self.base_url = base_url  # attachments are fetched from Discord's CDN or this API's own host only
        self.owner = owner  # the owner's user id, read when a button is pressed
        # The question goes out with buttons (buttons.py); a reply yes or no answers it too.
        self.approvals = ReplyApprovals(
            "discord",
            self._ask_in,
            how_to_answer=HOW_TO_ANSWER,
            how_to_answer_or_allow=HOW_TO_ANSWER_OR_ALLOW,
            say=self._say_in,
        )

    @property
    def name(self) -> str:
        return "discord"

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    async def start(self) -> None:
        return None

    async def stop(self, timeout: float) -> None:
        return None

    async def post(self, channel: str, text: str, once: str) -> str:
        """One message of at most 2,000 characters, made once for the nonce ``once`` (``nonce``); its id."""
        sent = await call("send a message", messageable(self.client, channel).send(content=text, nonce=once))
        return str(sent.id)

    async def edit(self, channel: str, message_id: str, text: str) -> None:
        target = messageable(self.client, channel).get_partial_message(int(message_id))
        await call("edit a message", target.edit(content=text[:MAX_TEXT_CHARS]))

    async def send_text(self, to: Address, text: TextOut) -> Sent:
        # The same nonce for the same part of the same reply: sent again after a crash, Discord keeps one message.
        return await send_parts(
            split(text.markdown), text, lambda index, part, _quote: self.post(to.chat_id, part, nonce(text.key, index))
        )

    async def edit_text(self, to: Address, message_id: str, markdown: str) -> bool:
        """The message replaced by ``markdown``'s first part; raises like ``send_text``."""
        await self.edit(to.chat_id, message_id, split(markdown)[0])
        return True

    async def typing(self, to: Address) -> None:
        await self.typing_in(to.chat_id)

    async def typing_in(self, channel: str) -> None:
        """ "typing..." shown once (Discord shows it 10 s, or until the bot's next message)."""
        await call("show typing", messageable(self.client, channel).typing())

    async def send_file(self, to: Address, file: OutgoingFile, key: str = "") -> Sent:
        """The file as an attachment (the caption as the message's text), one message for the same ``key`` (a
        turn's file sent again after a crash); the message's id."""
        import discord

        size = await asyncio.to_thread(lambda: file.path.stat().st_size)
        if size > MAX_FILE_BYTES:
            raise DeliveryError(f"{file.path.name} is larger than {MAX_FILE_BYTES // 2**20} MB", for_good=True)
        data = await asyncio.to_thread(file.path.read_bytes)
        attachment = discord.File(io.BytesIO(data), filename=file.path.name)
        caption = file.caption[:MAX_TEXT_CHARS] if file.caption else None
        sending = messageable(self.client, to.chat_id).send(content=caption, file=attachment, nonce=nonce(key, "file"))
        sent = await call("send a file", sending)
        return Sent((str(sent.id),))

    async def fetch(self, media: Media, folder: Path, limit_bytes: int) -> Path:
        if media.size is not None and media.size > limit_bytes:
            raise DeliveryError(f"{media.name} is larger than {limit_bytes // 2**20} MB", for_good=True)
        data = await download(media.ref, self.base_url, limit_bytes)
        target = folder / (Path(media.name).name or "discord-file")
        await asyncio.to_thread(target.write_bytes, data)
        return target

    async def ask_yes_no(self, to: Address, question: str, timeout: float) -> bool:
        """Ask in ``to``; the next "yes" or "no" there answers (``approvals.resolve``)."""
        send = partial(self.send_text, to, TextOut(question))
        return await self.approvals.questions.ask_yes_no(conversation_of(to.chat_id), send, timeout)

    async def _ask_in(self, chat: str, text: str) -> None:
        """An approval's question with its buttons (or its timeout, without) in the conversation ``chat``;
        ``DeliveryError`` when it cannot go now."""
        questions = self.approvals.questions
        if text == NO_ANSWER or not questions.is_open(chat):
            try:
                await self.send_text(Address(channel_of(chat)), TextOut(text))
            except DiscordUnavailable as err:
                raise DeliveryError(str(err)) from err
            return
        view = question_view(questions, chat, self.owner)
        try:
            await call("ask", messageable(self.client, channel_of(chat)).send(content=text[:MAX_TEXT_CHARS], view=view))
        except DiscordUnavailable as err:
            raise DeliveryError(str(err)) from err

    async def _say_in(self, chat: str, text: str) -> None:
        """A part of a long question before its last (which has the buttons), as it is: it quotes the arguments."""
        try:
            await call("ask", messageable(self.client, channel_of(chat)).send(content=text[:MAX_TEXT_CHARS]))
        except DiscordUnavailable as err:
            raise DeliveryError(str(err)) from err
