"""The Slack channel's side of the contract (channels/contract.py): text split to 4,000 characters and posted
with ``chat.postMessage`` (in the conversation's thread), edited with ``chat.update``, files shared in the same
place and fetched from their ``url_private`` with the bot token, and questions asked with Block Kit buttons
(buttons.py) or answered by a reply. An ``Address`` is the channel id and the thread's ts; a ``Media``'s ref is
the file's ``url_private``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from messaging_llm_bot.channels.contract import (
    Address,
    Capabilities,
    DeliveryError,
    Media,
    OutgoingFile,
    Sent,
    TextOut,
)
from messaging_llm_bot.channels.slack.api import SlackClient
from messaging_llm_bot.channels.slack.buttons import (
    Asked,
    Press,
    answered_blocks,
    new_token,
    question_blocks,
)
from messaging_llm_bot.channels.slack.format import (
    CAPABILITIES,
    MAX_FILE_BYTES,
    MAX_TEXT_CHARS,
    escape,
    slack_text,
    split,
)
from messaging_llm_bot.conversation.approvals import Answer, OpenQuestions, answer_of, answer_of_choice, chosen_text
from messaging_llm_bot.conversation.outgoing import send_parts


class SlackChannel:
    """The contract's ``Channel`` over one ``SlackClient``; called on the channel's event loop."""

    def __init__(self, client: SlackClient, questions: OpenQuestions | None = None) -> None:
        self.client = client
        self.questions = questions or OpenQuestions()
        self.asked: dict[str, Asked] = {}  # the open questions' buttons, by their token

    @property
    def name(self) -> str:
        return "slack"

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    async def start(self) -> None:
        return None

    async def stop(self, timeout: float) -> None:
        return None

    async def send_text(self, to: Address, text: TextOut) -> Sent:
        chat, thread = to.chat_id, to.thread_id  # a reply in a thread stays in it
        return await send_parts(split(text.markdown), text, lambda _i, part, _q: self.client.post(chat, part, thread))

    async def edit_text(self, to: Address, message_id: str, markdown: str) -> bool:
        """The message replaced by ``markdown``'s first part; raises like ``send_text``."""
        await self.client.update(to.chat_id, message_id, split(markdown)[0])
        return True

    async def typing(self, to: Address) -> None:
        return None  # bots on the Events API have no typing indicator

    async def send_file(self, to: Address, file: OutgoingFile) -> Sent:
        size = await asyncio.to_thread(lambda: file.path.stat().st_size)
        if size > MAX_FILE_BYTES:
            raise DeliveryError(f"{file.path.name} is larger than {MAX_FILE_BYTES // 2**20} MB", for_good=True)
        data = await asyncio.to_thread(file.path.read_bytes)
        comment = slack_text(file.caption)[:MAX_TEXT_CHARS] if file.caption else ""
        return Sent((await self.client.upload(to.chat_id, to.thread_id, file.path.name, data, comment),))

    async def fetch(self, media: Media, folder: Path, limit_bytes: int) -> Path:
        if media.size is not None and media.size > limit_bytes:
            raise DeliveryError(f"{media.name} is larger than {limit_bytes // 1_000_000} MB", for_good=True)
        data = await self.client.download(media.ref, limit_bytes)
        target = folder / (Path(media.name).name or "slack-file")
        await asyncio.to_thread(target.write_bytes, data)
        return target

    async def ask_yes_no(self, to: Address, question: str, timeout: float) -> bool:
        """Ask in ``to``; the next "yes" or "no" there answers (``resolve``)."""
        return await self.questions.ask_yes_no(question_key(to), lambda: self.send_text(to, TextOut(question)), timeout)

    async def ask_with_buttons(self, to: Address, key: str, question: str, how: str, offers_chat: bool) -> Asked:
        """Post ``question`` with its buttons; the answer goes to the open question ``key`` (``press``)."""
        token = new_token()
        text = escape(question)
        fallback = escape(f"{question}\n\n{how}")[:MAX_TEXT_CHARS]  # notifications, and the yes/no reply
        # Known before it is posted: a press may come before the post's answer does.
        self.asked[token] = Asked(token, key, to.chat_id, "", text)
        try:
            ts = await self.client.post(to.chat_id, fallback, to.thread_id, question_blocks(text, token, offers_chat))
        except BaseException:
            self.asked.pop(token, None)
            raise
        self.asked[token] = asked = Asked(token, key, to.chat_id, ts, text)
        return asked

    def press(self, press: Press) -> bool:
        """A button pressed by the owner (the caller checked): True when it answered an open question asked
        in that channel."""
        asked = self.asked.get(press.token)
        if asked is None or asked.channel != press.channel:
            return False
        return self.questions.answer(asked.key, answer_of_choice(press.choice))

    async def show_answer(self, asked: Asked, answer: Answer | None, unanswered: str) -> None:
        """The question's message says what was chosen (``unanswered`` when none was), without its buttons (the
        question is closed)."""
        self.asked.pop(asked.token, None)
        chosen = unanswered if answer is None else chosen_text(answer)
        text = f"{asked.text}\n\n{chosen}"[:MAX_TEXT_CHARS]
        await self.client.update(asked.channel, asked.ts, text, answered_blocks(asked.text, chosen))

    def resolve(self, key: str, text: str) -> bool:
        """Answer an open question of ``key`` with ``text``; True when the message was that answer."""
        answer = answer_of(text, self.questions.offered(key))
        return answer is not None and self.questions.answer(key, answer)


def question_key(to: Address) -> str:
    """Questions are per conversation: a DM, or a thread."""
    return f"{to.chat_id}|{to.thread_id or ''}"
