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

from assistant_framework.config.settings import SlackSettings
from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.agent.guard import ApprovalRequest, ApproveCallback
from messaging_llm_bot.channels.contract import Address, DeliveryError
from messaging_llm_bot.channels.slack.api import SlackUnavailable
from messaging_llm_bot.channels.slack.buttons import Asked
from messaging_llm_bot.channels.slack.channel import SlackChannel, question_key
from messaging_llm_bot.channels.slack.files import save_files
from messaging_llm_bot.channels.slack.format import CAPABILITIES, escape
from messaging_llm_bot.channels.slack.live import SlackLive, ts_of_number
from messaging_llm_bot.channels.slack.message import SlackMessage, message_of_payload
from messaging_llm_bot.channels.slack.settings import place_of
from messaging_llm_bot.conversation.approvals import Answer, question_parts
from messaging_llm_bot.conversation.chat_turns import ChatTurns, Shows, TurnMessage
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import Received

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


class SlackTurns(ChatTurns):
    """Runs turns for the Slack channel (conversation/chat_turns.py); one per running channel."""

    platform: SlackChannel
    REREAD = True  # answered meanwhile: a job run handed over again
    SEND_ERRORS = (SlackUnavailable, DeliveryError)  # unavailable: tried again, not before its Retry-After
    MAX_FILE_BYTES = CAPABILITIES.max_file_bytes

    def __init__(
        self, runtime: Runtime, inbox: Inbox, channel: SlackChannel, config: Callable[[], SlackSettings]
    ) -> None:
        super().__init__(runtime, inbox, "slack")  # the turns running, the pool, the chat's flags, busy modes
        self.platform = self.slack = channel
        self._config = config

    @property
    def config(self) -> SlackSettings:
        return self._config()

    def address_of(self, conversation_id: str) -> Address:
        return address_of(conversation_id)

    def live_ref(self, number: int) -> str:
        return ts_of_number(number)  # the live message's ts, recorded as a number

    def message(self, item: InboxItem) -> TurnMessage | None:
        msg = message_of_payload(item.payload)
        if msg is None:
            return None
        from_owner = self.config.is_owner(msg.user)
        # Someone's files: outside content, in the chat's own area (the owner's memory in their DM).
        save = save_files(self.slack.client, msg, self.runtime.settings)
        received = Received("document", save=save) if msg.files else Received("text", msg.text)
        to = Address(msg.channel, msg.reply_thread)
        # Only the owner's own DM sees the owner's data.
        return TurnMessage(to, msg.user, msg.direct and from_owner, from_owner, received, msg.ts, joinable(msg))

    async def shows(self, item: InboxItem, msg: TurnMessage) -> Shows:
        stream = self.config.stream and self.runtime.settings.llm.stream
        live = SlackLive(self.slack.client, msg.to)
        return self.live_progress(item, live, stream=stream, edit_interval=self.config.edit_interval_seconds)

    def approver(self, item: InboxItem, msg: TurnMessage, loop: asyncio.AbstractEventLoop) -> ApproveCallback:
        to = msg.to
        return self.slack.questions.approver(lambda request: self.ask(to, request), loop, question_key(to))

    async def ask(self, to: Address, request: ApprovalRequest) -> Answer:
        """Ask the owner and wait for the press or the reply yes/no/chat (False on timeout or error); the question's
        message then says what was chosen, without its buttons."""
        key = question_key(to)

        async def post(offers: bool) -> Asked:
            how = HOW_TO_ANSWER_OR_ALLOW if offers else HOW_TO_ANSWER
            *earlier, last = question_parts(request)
            try:
                for part in earlier:  # a long question: its arguments whole, the buttons under the last part
                    await self.slack.client.post(to.chat_id, escape(part), to.thread_id)
                return await self.slack.ask_with_buttons(to, key, last, how, offers)
            except SlackUnavailable as err:
                raise DeliveryError(str(err)) from err

        async def show(asked: Asked, answer: Answer | None, unanswered: str) -> None:
            if answer is None:
                await self.say(to, unanswered)
            try:
                await self.slack.show_answer(asked, answer, unanswered)
            except (SlackUnavailable, DeliveryError) as err:
                log.info("slack: the question in %s was not updated: %s", asked.channel, err)

        return await self.slack.questions.ask_with_buttons(key, key, request, post, show, "slack")


def joinable(msg: SlackMessage) -> bool:
    """A turn later messages may join, or a message that may join one (busy modes): a person's own text in a
    DM (a channel's mentions never join; no command, no files)."""
    return msg.direct and not msg.files and not msg.text.startswith("/")
