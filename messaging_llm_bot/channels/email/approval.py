"""Email's part of approvals (conversation/approvals.py's ``ReplyApprovals`` is the rest): the question goes out
as a mail in the thread, and the owner's next mail in that thread answers it ("yes" / "no" as its first line).
That mail is taken before the thread's queue (the turn waiting for it holds the queue) and is no new turn."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from messaging_llm_bot.agent.guard import ApprovalRequest
from messaging_llm_bot.channels.email.message import Thread
from messaging_llm_bot.channels.email.outbox import Outbox
from messaging_llm_bot.channels.email.servers import MailServerError
from messaging_llm_bot.conversation.approvals import (
    NO_ANSWER,
    TIMEOUT_SECONDS,
    Answer,
    ReplyApprovals,
    SendText,
)
from messaging_llm_bot.conversation.delivery import DeliveryError

HOW_TO_ANSWER = "Reply to this mail with yes to confirm or no to decline (on the first line)."
HOW_TO_ANSWER_OR_ALLOW = (
    "Reply to this mail with yes to confirm, no to decline, or chat to allow it for this conversation (on the "
    "first line)."
)


class EmailApprovals:
    """Open questions, one per conversation (mail thread)."""

    def __init__(self, outbox: Outbox, timeout_seconds: float = TIMEOUT_SECONDS) -> None:
        self.outbox = outbox
        self.replies = ReplyApprovals(
            "email",
            self._no_thread,
            timeout_seconds,
            how_to_answer=HOW_TO_ANSWER,
            how_to_answer_or_allow=HOW_TO_ANSWER_OR_ALLOW,
            part_chars=None,  # one mail, however long
        )
        self.questions = self.replies.questions

    def approver(
        self, conversation: str, to: str, thread: Thread, loop: asyncio.AbstractEventLoop
    ) -> Callable[[ApprovalRequest], Answer]:
        """A blocking callback for the agent's worker thread."""
        return self.replies.approver(conversation, loop, self._mailer(conversation, to, thread))

    def resolve(self, conversation: str, text: str) -> bool:
        """Answer the open question of ``conversation`` with a mail's ``text``; True when it was that answer."""
        first = next((line for line in text.splitlines() if line.strip()), "")
        return self.replies.resolve(conversation, first)

    def _mailer(self, conversation: str, to: str, thread: Thread) -> SendText:
        """Mails a question (each its own Message-ID) and, after no answer in time, its timeout in the thread."""
        key = ""

        async def send(_conversation: str, text: str) -> None:
            nonlocal key
            if text == NO_ANSWER:
                mail_key = key + ":timeout"
            else:
                key = mail_key = f"ask:{conversation}:{thread.message_id}:{time.time_ns()}"
            try:
                await self.outbox.send(to, text, key=mail_key, thread=thread)
            except MailServerError as err:
                raise DeliveryError(str(err)) from err

        return send

    async def _no_thread(self, conversation: str, text: str) -> None:
        raise DeliveryError(f"a question in {conversation} is asked only in its thread (approver)")
