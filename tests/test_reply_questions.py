"""conversation/approvals.py's OpenQuestions.ask_yes_no, the contract's ask_yes_no of Matrix and WhatsApp: a
question in a chat answered by the owner's next message there (ReplyApprovals.resolve, as their intake calls
it), once; no answer in time or a send that fails is no, and leaves no question open."""

from __future__ import annotations

import asyncio

import pytest

from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.delivery import DeliveryError

CHAT = "!room:example.org"


async def _no_send(_chat: str, _text: str) -> None:
    raise AssertionError("the approvals' own sender is not used by ask_yes_no")


@pytest.mark.parametrize(("reply", "expected"), [("yes", True), ("no", False)])
def test_the_owners_next_message_answers_the_question_once(reply: str, expected: bool) -> None:
    async def main() -> tuple[bool, list[str], bool, bool]:
        approvals = ReplyApprovals("test", _no_send)
        sent: list[str] = []

        async def send() -> None:
            sent.append("Delete the file?")
            # The owner answers right after the question arrived: the intake hands their message to resolve.
            asyncio.get_running_loop().call_soon(lambda: answered.append(approvals.resolve(CHAT, reply)))

        answered: list[bool] = []
        got = await approvals.questions.ask_yes_no(CHAT, send, timeout=5)
        again = approvals.resolve(CHAT, reply)  # the question is closed: a second "yes" is a new message
        return got, sent, answered == [True], again

    got, sent, resolved, again = asyncio.run(main())
    assert got is expected and sent == ["Delete the file?"] and resolved and not again


def test_no_answer_in_time_is_no_and_a_failed_send_leaves_no_question_open() -> None:
    async def main() -> tuple[bool, bool, bool]:
        approvals = ReplyApprovals("test", _no_send)

        async def send() -> None:
            return None

        timed_out = await approvals.questions.ask_yes_no(CHAT, send, timeout=0.05)
        late = approvals.resolve(CHAT, "yes")

        async def fails() -> None:
            raise DeliveryError("the homeserver cannot be reached")

        with pytest.raises(DeliveryError):
            await approvals.questions.ask_yes_no(CHAT, fails, timeout=5)
        return timed_out, late, approvals.resolve(CHAT, "yes")

    timed_out, late, after_failure = asyncio.run(main())
    assert timed_out is False and late is False and after_failure is False
