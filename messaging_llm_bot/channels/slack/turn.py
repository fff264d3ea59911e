"""Answer one durable inbox item from Slack: the agent's turn, its answer growing in one message while the model
writes (``chat.update``, conversation/progress.py), then the reply delivered through the ledger: the live
message edited into the first part, the rest posted after it in the same place.

Used for live messages, the start-up replay, job runs and the owner's notices; the caller holds the chat's queue,
so one conversation's messages are answered in order. Each part goes out once and is recorded as it goes: a crash
resends only what is not recorded. While the Web API cannot be reached or rate-limits the bot, the reply waits (it
is in the inbox) and is retried (after Slack's ``Retry-After``) until a stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial

from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.media.files_out import FileToSend
from messaging_llm_bot.agent.guard import ApprovalRequest
from messaging_llm_bot.channels.contract import Address, DeliveryError, OutgoingFile, TextOut
from messaging_llm_bot.channels.slack.api import SlackUnavailable
from messaging_llm_bot.channels.slack.buttons import Asked
from messaging_llm_bot.channels.slack.channel import SlackChannel, question_key
from messaging_llm_bot.channels.slack.files import save_files
from messaging_llm_bot.channels.slack.format import CAPABILITIES, split
from messaging_llm_bot.channels.slack.live import SlackLive, ts_of_number
from messaging_llm_bot.channels.slack.message import SlackMessage, message_of_payload
from messaging_llm_bot.channels.slack.settings import SlackConfig, place_of
from messaging_llm_bot.conversation.approvals import NO_ANSWER, Answer, offers_conversation, question_text
from messaging_llm_bot.conversation.files_out import file_sender
from messaging_llm_bot.conversation.item_turns import ItemTurns, SendLater, is_notice_item
from messaging_llm_bot.conversation.progress import Progress
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import Received, TurnInput, TurnRequest

log = logging.getLogger(__name__)

HOW_TO_ANSWER = "Press a button, or reply yes to confirm or no to decline."
HOW_TO_ANSWER_OR_ALLOW = (
    "Press a button, or reply yes to confirm, no to decline, or chat to allow it for this conversation (this "
    "skill's calls then run without asking while the outside content named above is all that is in view; new "
    "outside content asks again, /reset ends it)."
)


def address_of(conversation_id: str) -> Address:
    channel, thread = place_of(conversation_id)
    return Address(channel, thread)


class TurnRunner(ItemTurns):
    """Runs turns for the Slack channel; one per running channel."""

    REREAD = True  # answered meanwhile: a job run handed over again

    def __init__(
        self, runtime: Runtime, inbox: Inbox, channel: SlackChannel, config: Callable[[], SlackConfig]
    ) -> None:
        super().__init__(runtime, inbox, "slack")  # the turns running, the pool, the chat's flags, busy modes
        self.slack = channel
        self._config = config

    @property
    def config(self) -> SlackConfig:
        return self._config()

    async def answer_message(self, item: InboxItem) -> None:
        if is_notice_item(item):
            if await self.deliver(item, address_of(item.conversation_id), item.reply or ""):
                await asyncio.to_thread(self.inbox.complete, item.item_id)
            return
        msg = message_of_payload(item.payload)
        if msg is None:  # cannot happen for items this channel wrote
            return await self.unreadable(item)
        to = Address(msg.channel, msg.reply_thread)
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []  # offered to this turn but not answered by it: each answered after it
        # A live message a crashed run left (the ledger's record) is taken over: edited, never left beside another.
        live_ts = ts_of_number(item.live) if item.live is not None else None
        if reply is None:
            reply, merged, later, live_ts = await self._reply(item, msg, to)
        if await self.deliver(item, to, reply, live_ts):
            await self.finish(item, merged, later)  # else stopping: it and the messages it answers stay

    async def _reply(
        self, item: InboxItem, msg: SlackMessage, to: Address
    ) -> tuple[str, list[str], list[InboxItem], str | None]:
        """A new turn's reply (``ItemTurns.make_reply``), its answer growing in the live message; also the live
        message's ts."""
        progress = Progress(
            SlackLive(self.slack.client, to),
            stream=self.config.stream and self.runtime.settings.llm.stream,
            edit_interval=self.config.edit_interval,
            message_id=item.live,
            on_message=lambda number: self.record_live(item.item_id, number),
        )
        await progress.start()
        produce = partial(self._turn, item, msg, to, progress)
        reply, merged, later = await self.make_reply(item, msg.user, joinable(msg), produce, after=progress.stop)
        live_ts = ts_of_number(progress.message_id) if progress.message_id is not None else None
        return reply, merged, later, live_ts

    async def _turn(self, item: InboxItem, msg: SlackMessage, to: Address, progress: Progress) -> str:
        from_owner = self.config.is_owner(msg.user)
        owner_chat = msg.direct and from_owner  # only the owner's own DM sees the owner's data
        approve = None
        if owner_chat:
            loop = asyncio.get_running_loop()
            approve = self.slack.questions.approver(lambda request: self.ask(to, request), loop, question_key(to))
        got = TurnInput(msg.text)
        if msg.files:  # someone's files: outside content, in the chat's own area (the owner's memory in their DM)
            save = partial(save_files, self.slack.client, msg, self.runtime.settings)
            read = await self.read(item.conversation_id, owner_chat, Received("document", save=save))
            if isinstance(read, str):
                return read  # the file could not be fetched or read: the reason, no model turn
            got = read
        send_file = file_sender(
            self.runtime.workspace,
            item.item_id,
            asyncio.get_running_loop(),
            lambda one: self._send_file(to, one),
            CAPABILITIES.max_file_bytes,
        )
        request = TurnRequest(
            item.conversation_id,
            got.text,
            item.conversation_id,
            msg.user,
            msg.ts,
            owner_chat,
            from_owner,
            untrusted=got.untrusted,
            images=got.images,
            notice=got.notice,
            send_file=send_file,
        )
        return await self.ask_agent(request, approve=approve, on_event=progress.on_event)

    async def _send_file(self, to: Address, one: FileToSend) -> str:
        """A file of the ``send_file`` skill into the turn's channel and thread (its ledger: media/files_out.py)."""
        sent = await self.slack.send_file(to, OutgoingFile("photo" if one.photo else "file", one.path, one.caption))
        return sent.message_ids[0]

    async def ask(self, to: Address, request: ApprovalRequest) -> Answer:
        """Ask the owner and wait for the reply yes/no/chat (False on timeout or error)."""
        questions = self.slack.questions
        key = question_key(to)
        offers = offers_conversation(request)
        future = questions.open(key, key, offers)
        how = HOW_TO_ANSWER_OR_ALLOW if offers else HOW_TO_ANSWER
        asked: Asked | None = None
        answer: Answer | None = None
        try:
            asked = await self.slack.ask_with_buttons(to, key, question_text(request), how, offers)
            answer = await questions.wait(future)
            if answer is None:
                await self.say(to, NO_ANSWER)
                return False
            return answer
        except (SlackUnavailable, DeliveryError) as err:
            log.warning("slack: could not ask for confirmation: %s", err)
            return False
        finally:
            questions.close(key)
            if asked is not None:
                await self._show_answer(asked, answer)

    async def _show_answer(self, asked: Asked, answer: Answer | None) -> None:
        try:
            await self.slack.show_answer(asked, answer)
        except (SlackUnavailable, DeliveryError) as err:
            log.info("slack: the question in %s was not updated: %s", asked.channel, err)

    async def say(self, to: Address, text: str) -> None:
        try:
            await self.slack.send_text(to, TextOut(text))
        except (SlackUnavailable, DeliveryError) as err:
            log.info("slack: could not say %r in %s: %s", text[:40], to.chat_id, err)

    async def _send(self, item: InboxItem, to: Address, reply: str, live_ts: str | None) -> None:
        """The parts not in the ledger; the first into the live message when there is one."""

        async def on_part_sent(index: int, _ts: str) -> None:
            await self.record_part(item.item_id, index, index + 1)

        skip = self.inbox.parts_sent(item.item_id)
        if skip == 0 and live_ts is not None:
            await self.slack.client.update(to.chat_id, live_ts, split(reply)[0])
            await on_part_sent(0, live_ts)
            skip = 1
        await self.slack.send_text(to, TextOut(reply, None, skip, on_part_sent, item.item_id))

    async def deliver(self, item: InboxItem, to: Address, reply: str, live_ts: str | None = None) -> bool:
        """The one delivery path of chat turns, job runs and notices (``ItemTurns.deliver_until``): tried again
        while the Web API cannot take it, not before its ``Retry-After``; False when stopping first."""

        async def attempt() -> bool:
            try:
                await self._send(item, to, reply, live_ts)
            except SlackUnavailable as err:
                raise SendLater(err, after=err.retry_after) from err
            return True

        return await self.deliver_until(item, to.chat_id, attempt)

    async def answer_job(self, item: InboxItem) -> None:
        to = address_of(item.conversation_id)
        owner = self.config.owner or ""
        await self.run_job(item, owner, lambda text: self.deliver(item, to, text), lambda text: self.say(to, text))


def joinable(msg: SlackMessage) -> bool:
    """A turn later messages may join, or a message that may join one (busy modes): a person's own text in a
    DM (a channel's mentions never join; no command, no files)."""
    return msg.direct and not msg.files and not msg.text.startswith("/")
