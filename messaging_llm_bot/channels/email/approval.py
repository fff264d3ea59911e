"""Email's part of approvals (conversation/approvals.py has the rest): the question goes out as a mail in the
thread, and the owner's next mail in that thread answers it ("yes" / "no" as its first line). That mail is
taken before the thread's queue (the turn waiting for it holds the queue) and is no new turn."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable

from messaging_llm_bot.channels.email.message import Thread
from messaging_llm_bot.channels.email.outbox import Outbox
from messaging_llm_bot.channels.email.servers import MailServerError
from messaging_llm_bot.conversation.approvals import (
    NO_ANSWER,
    TIMEOUT_SECONDS,
    Answer,
    OpenQuestions,
    answer_of,
    offers_conversation,
    question_text,
)

log = logging.getLogger(__name__)

HOW_TO_ANSWER = "Reply to this mail with yes to confirm or no to decline (on the first line)."
HOW_TO_ANSWER_OR_ALLOW = (
    "Reply to this mail with yes to confirm, no to decline, or chat to allow it for this conversation (on the "
    "first line)."
)


class Approvals:
    """Open questions, one per conversation (mail thread)."""

    def __init__(self, outbox: Outbox, timeout_seconds: float = TIMEOUT_SECONDS) -> None:
        self.outbox = outbox
        self.questions = OpenQuestions(timeout_seconds)

    def approver(
        self, conversation: str, to: str, thread: Thread, loop: asyncio.AbstractEventLoop
    ) -> Callable[[dict[str, Any]], Answer]:
        """A blocking callback for the agent's worker thread."""
        return self.questions.approver(lambda request: self.ask(conversation, to, thread, request), loop, conversation)

    async def ask(self, conversation: str, to: str, thread: Thread, request: dict[str, Any]) -> Answer:
        """Mail the question and wait for the owner's answer (False on timeout or when it cannot be sent)."""
        future = self.questions.open(conversation, conversation, request)
        key = f"ask:{conversation}:{thread.message_id}:{time.time_ns()}"  # each question its own Message-ID
        how = HOW_TO_ANSWER_OR_ALLOW if offers_conversation(request) else HOW_TO_ANSWER
        try:
            await self.outbox.send(to, question_text(request, how), key=key, thread=thread)
            answer = await self.questions.wait(future)
            if answer is None:
                await self._say(to, thread, NO_ANSWER, key + ":timeout")
                return False
            return answer
        except MailServerError as err:
            log.warning("email: could not ask for confirmation in %s: %s", conversation, err)
            return False
        finally:
            self.questions.close(conversation)

    def resolve(self, conversation: str, text: str) -> bool:
        """Answer the open question of ``conversation`` with a mail's ``text``; True when it was that answer."""
        first = next((line for line in text.splitlines() if line.strip()), "")
        answer = answer_of(first, self.questions.offered(conversation))
        return answer is not None and self.questions.answer(conversation, answer)

    async def _say(self, to: str, thread: Thread, text: str, key: str) -> None:
        try:
            await self.outbox.send(to, text, key=key, thread=thread)
        except MailServerError:
            pass
