"""conversation/approvals.py's OpenQuestions.ask_yes_no, the contract's ask_yes_no of Matrix and WhatsApp: a
question in a chat answered by the owner's next message there (ReplyApprovals.resolve, as their intake calls
it), once; no answer in time or a send that fails is no, and leaves no question open."""

from __future__ import annotations

import asyncio

import pytest

from messaging_llm_bot.agent.guard import OWNER_NO, ApprovalRequest
from messaging_llm_bot.conversation.approvals import (
    NO_ANSWER,
    STOPPED_UNANSWERED,
    OpenQuestions,
    ReplyApprovals,
    decline_questions_on,
)
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


#: A delete the policy asks the owner about.
DELETE: ApprovalRequest = {
    "skill": "file",
    "args": {"action": "delete", "path": "notes/a.md"},
    "capabilities": ["write"],
    "reason": "deletes ask",
    "chat": CHAT,
    "allow_conversation": False,
}


async def _thread_asking(questions: OpenQuestions, shown: list[tuple[str, object, str]]) -> asyncio.Future[object]:
    """A worker thread asks ``DELETE`` through ``approver`` as a question with buttons (its message's updates go to
    ``shown``); returns once the question is posted and waits for the press (post() does not wait)."""
    loop = asyncio.get_running_loop()
    posted = asyncio.Event()

    async def post(_offers: bool) -> str:
        posted.set()
        return "message-1"

    async def show(message: str, answer: object, unanswered: str) -> None:
        shown.append((message, answer, unanswered))

    approve = questions.approver(
        lambda asked: questions.ask_with_buttons("k1", CHAT, asked, post, show, "test"), loop, CHAT
    )
    thread = asyncio.ensure_future(asyncio.to_thread(approve, DELETE))
    await posted.wait()
    return thread


def test_a_question_with_buttons_ended_by_the_stop_says_the_bot_stopped_not_that_time_ran_out() -> None:
    """The worker thread asks through ``approver``; the channel's stop (``decline_questions_on``) declines it at
    once, and the question's message is updated to say the bot stopped (it said "No answer in time")."""
    shown: list[tuple[str, object, str]] = []

    async def main() -> bool:
        answer = await _thread_asking(OpenQuestions(timeout_seconds=60), shown)
        assert decline_questions_on(asyncio.get_running_loop()) == 1
        return await answer is True

    assert asyncio.run(main()) is False
    assert shown == [("message-1", None, STOPPED_UNANSWERED)]


@pytest.mark.parametrize("first", ["stop", "press"])
def test_a_press_and_the_stop_in_the_same_loop_pass_give_the_thread_what_the_message_says(first: str) -> None:
    """The owner's press and the channel's stop land in one loop pass (both scheduled with call_soon): the thread's
    answer and what the question's message says (the press taken: "Confirmed: doing it."; not taken: the stop's
    words) are one decision, the first of the two. Before, the stop cancelled the thread's wait one pass before the
    question's task, so a press after it (or before it, while the task still ran) was taken as a confirm that the
    thread never got."""
    shown: list[tuple[str, object, str]] = []

    async def main() -> tuple[object, list[bool], int]:
        loop = asyncio.get_running_loop()
        questions = OpenQuestions(timeout_seconds=60)
        thread = await _thread_asking(questions, shown)
        taken: list[bool] = []
        declined: list[int] = []
        stop = lambda: declined.append(decline_questions_on(loop))  # noqa: E731
        press = lambda: taken.append(questions.answer("k1", True))  # noqa: E731
        for call in (stop, press) if first == "stop" else (press, stop):
            loop.call_soon(call)
        got = await thread
        for _ in range(5):  # the question's task ends (its message updated) a pass or two later
            await asyncio.sleep(0)
        return got, taken, declined[0]

    got, taken, declined = asyncio.run(main())
    if first == "stop":
        assert (got, taken, declined) == (False, [False], 1)  # the press is not taken: the channel says so
        assert shown == [("message-1", None, STOPPED_UNANSWERED)]
    else:
        assert (got, taken, declined) == (True, [True], 0)  # the press decided: the thread does what it says
        assert shown == [("message-1", True, NO_ANSWER)]


@pytest.mark.parametrize("how", ["press no", "/stop", "the bot's stop", "no answer in time"])
def test_only_the_owners_own_no_reaches_the_thread_as_the_owners_no(how: str) -> None:
    """The gate keeps the owner's no to a call for the turn's message (a replay after a kill is not asked again):
    only a press of No is ``OWNER_NO``; /stop, the bot's stop and a question no one answered are a plain False
    (the owner said nothing about the call, so a replay asks again)."""
    shown: list[tuple[str, object, str]] = []

    async def main() -> object:
        questions = OpenQuestions(timeout_seconds=0.2 if how == "no answer in time" else 60)
        thread = await _thread_asking(questions, shown)
        if how == "press no":
            assert questions.press("k1", "no") == "Declined: not done."
        elif how == "/stop":
            assert questions.decline_all(CHAT) == 1
        elif how == "the bot's stop":
            assert decline_questions_on(asyncio.get_running_loop()) == 1
        return await thread

    got = asyncio.run(main())
    assert not got
    assert (got == OWNER_NO and got is not False) is (how == "press no"), repr(got)
