"""Signal's part of approvals (conversation/approvals.py has the rest): Signal has no buttons, so the bot
asks in the owner's direct chat and the owner's next message there ("yes" / "no") answers it. That message
bypasses the chat's queue (the turn waiting for it holds the queue). A call that asks only because outside
content is in view may also be answered "chat": allowed for this conversation. At most one open question
per chat.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.settings import recipient_params
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

HOW_TO_ANSWER = "Reply yes to confirm or no to decline."
HOW_TO_ANSWER_OR_ALLOW = (
    "Reply yes to confirm, no to decline, or chat to allow it for this conversation (this skill's calls "
    "then run without asking while the outside content named above is all that is in view; new outside "
    "content asks again, /reset ends it)."
)


def question_text_for_signal(request: dict[str, Any]) -> str:
    """The question with how to answer it by a reply."""
    return question_text(request, HOW_TO_ANSWER_OR_ALLOW if offers_conversation(request) else HOW_TO_ANSWER)


class Approvals:
    """Open questions, keyed by their chat."""

    def __init__(self, client: SignalClient, timeout_seconds: float = TIMEOUT_SECONDS) -> None:
        self.client = client
        self.questions = OpenQuestions(timeout_seconds)

    def approver(self, chat: str, loop: asyncio.AbstractEventLoop) -> Callable[[dict[str, Any]], Answer]:
        """A blocking callback for the agent's worker thread."""
        return self.questions.approver(lambda request: self.ask(chat, request), loop, chat)

    async def ask(self, chat: str, request: dict[str, Any]) -> Answer:
        """Send the question and wait for the owner's yes/no/chat (False on timeout or error)."""
        future = self.questions.open(chat, chat, request)
        try:
            await self.client.rpc("send", {**recipient_params(chat), "message": question_text_for_signal(request)})
            answer = await self.questions.wait(future)
            if answer is None:
                await self._say(chat, NO_ANSWER)
                return False
            return answer
        except (SignalRpcError, SignalUnavailable) as err:
            log.warning("signal: could not ask for confirmation in %s: %s", chat, err)
            return False
        finally:
            self.questions.close(chat)

    def resolve(self, chat: str, text: str) -> bool:
        """Answer an open question of ``chat`` with ``text``; True when the message was that answer."""
        answer = answer_of(text, self.questions.offered(chat))
        return answer is not None and self.questions.answer(chat, answer)

    async def _say(self, chat: str, text: str) -> None:
        try:
            await self.client.rpc("send", {**recipient_params(chat), "message": text})
        except (SignalRpcError, SignalUnavailable):
            pass
