"""Approvals, once for every channel: the owner confirms a skill call the policy marks ``ask``.

The agent runs in a worker thread and calls ``approve(request) -> bool``. What every channel shares lives
here: the question's words, the words that answer it, the open questions and their timeout (no answer in
time means no), declining a chat's open questions when the owner stops the turn, and the bridge from the
worker thread to the channel's event loop, which fails closed. An answer is True (confirm), False (decline)
or ``ALLOW_CONVERSATION``, which only a question that offers it can get (a call that asks only because
outside content is in view; agent/guard.py). A channel only sends the question and hands the owner's
answer back: Telegram and Slack with buttons (``OpenQuestions.ask_with_buttons``: the question's life, and
what its message says once answered, ``chosen_text``), Signal, Matrix and WhatsApp by the owner's next
message (``ReplyApprovals``, below).

A question a worker thread waits for ends with its channel: at the stop (``decline_questions_on`` the channel's
loop) every question open on that loop and not answered yet is declined at once and any asked later is declined
unasked, so a turn waiting for an answer that can no longer come goes on at once instead of holding the stop, and
the process's exit, for the timeout. The thread's answer and the question's message come from one decision
(``_Asked``), the first of the owner's answer and the stop, even when both come in the same loop pass.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import logging
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from typing import Any, TypeVar

from messaging_llm_bot.agent.guard import ALLOW_CONVERSATION, OWNER_NO, QUESTION_ARGS_CHARS, ApprovalRequest
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.markup import plain_parts

log = logging.getLogger(__name__)

#: The platform's handle of a posted question (Telegram's message, Slack's ``Asked``).
Posted = TypeVar("Posted")

TIMEOUT_SECONDS = 300.0
#: What the owner is told when a question times out.
NO_ANSWER = "No answer in time: not done."
#: What an open question's message says once the bot stopped before the owner answered.
STOPPED_UNANSWERED = "The bot stopped before an answer came: not done."
#: What a button pressed on a question no longer open (answered, timed out) shows.
EXPIRED = "This question has expired."
#: What "allow for this conversation" means, said wherever it is offered (buttons, a reply, the terminal's c).
ALLOWANCE = (
    "this skill's calls then run without asking while the outside content named above is all that is in view; "
    "new outside content asks again, /reset ends it"
)
#: A question shows this much of the call's arguments (the gate asks about none longer; agent/guard.py).
MAX_ARGS_CHARS = QUESTION_ARGS_CHARS
#: One message of a question, at most: Discord's 2,000 characters (the smallest channel's) with room. A longer
#: question goes in parts (``question_parts``), the last with why it asks and how to answer (the buttons).
QUESTION_PART_CHARS = 1900
YES = frozenset({"yes", "y", "ok", "confirm", "ja", "oui"})
NO = frozenset({"no", "n", "cancel", "decline", "nein", "non"})
#: "Allow for this conversation" (only where the question offers it; elsewhere it confirms this call).
CHAT = frozenset({"chat", "always", "allow", "allow for this conversation"})

#: The owner's answer: True, False or ``ALLOW_CONVERSATION``.
Answer = bool | str
#: Asks the owner on the channel's loop.
Ask = Callable[[ApprovalRequest], Coroutine[Any, Any, Answer]]
#: What a question's message says once answered by a button or a reply (Telegram, Slack), by the button's choice.
CHOSEN = {
    "yes": "Confirmed: doing it.",
    "no": "Declined: not done.",
    "chat": "Allowed for this conversation: doing it.",
}


def offers_conversation(request: ApprovalRequest) -> bool:
    """The question may be answered "allow for this conversation" (the guard says so in the request)."""
    return bool(request.get("allow_conversation"))


def question_text(request: ApprovalRequest, how_to_answer: str = "") -> str:
    """The question shown to the owner: which skill, what it would do, and why it asks."""
    args = json.dumps(request.get("args") or {}, ensure_ascii=False)
    if len(args) > MAX_ARGS_CHARS:
        args = args[:MAX_ARGS_CHARS] + "…"
    goes_to = f"\ngoes to: {request['goes_to']}" if request.get("goes_to") else ""
    text = (
        f"Confirm this action?\n\nskill: {request.get('skill')}\nargs: {args}{goes_to}\n\n"
        f"Why I ask: {request.get('reason', 'the policy asks for confirmation')}."
    )
    return f"{text}\n\n{how_to_answer}" if how_to_answer else text


def question_parts(
    request: ApprovalRequest, how_to_answer: str = "", part_chars: int | None = QUESTION_PART_CHARS
) -> list[str]:
    """``question_text`` in messages of at most ``part_chars`` (None: one, whatever its length), split between
    words: every argument whole, over as many messages as it takes; the last says why it asks and how to answer."""
    text = question_text(request, how_to_answer)
    return [text] if part_chars is None else plain_parts(text, part_chars)


def answer_of(text: str, offered: bool) -> Answer | None:
    """The answer a typed word gives: True for a yes, False for a no, ``ALLOW_CONVERSATION`` for "chat" where
    it is offered (else a yes for this call); None for a message that is no answer."""
    word = text.strip().strip(".!").lower()
    if word in CHAT:
        return ALLOW_CONVERSATION if offered else True
    return True if word in YES else False if word in NO else None


def choice_of(answer: Answer) -> str:
    """The button (``CHOSEN``'s key) that gives ``answer``."""
    return "chat" if answer == ALLOW_CONVERSATION else "yes" if answer is True else "no"


def answer_of_choice(choice: str) -> Answer:
    """The answer a button gives: yes, no, or "chat" (allow for this conversation)."""
    return ALLOW_CONVERSATION if choice == "chat" else choice == "yes"


def chosen_text(answer: Answer | None) -> str:
    """What the question's message says once answered (``NO_ANSWER`` when none came in time)."""
    return NO_ANSWER if answer is None else CHOSEN[choice_of(answer)]


def fail_closed(answer: object) -> Answer:
    """Only a confirm or an allowance passes; anything else (an error's value, None) is a decline."""
    return answer if answer is True or (isinstance(answer, str) and answer in (ALLOW_CONVERSATION, OWNER_NO)) else False


class _Asked:
    """One question a worker thread waits for. ``outcome`` is its one decision, made once by the first of: the
    owner's answer (``OpenQuestions.answer``, the moment it is taken), the question's own end (no answer in time,
    a failed send), the channel's stop (``decline_questions_on``). The thread gets it and the question's message
    says it: a press taken in the same loop pass as the stop cannot say "doing it" to a thread told no."""

    def __init__(self) -> None:
        self.outcome: concurrent.futures.Future[Answer] = concurrent.futures.Future()
        self.task: asyncio.Task[Answer] | None = None

    def take(self, answer: Answer) -> bool:
        """Decide ``answer``; False when the question was already decided (the stop came first)."""
        try:
            self.outcome.set_result(answer)
        except concurrent.futures.InvalidStateError:
            return False
        return True


#: The ``_Asked`` a question's task on the loop answers (OpenQuestions.open reads it).
_ASKED: contextvars.ContextVar[_Asked | None] = contextvars.ContextVar("asked", default=None)


class _QuestionsOnLoops:
    """The questions worker threads wait for, per event loop they are asked on, and the loops whose channel
    stopped (any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asked: dict[asyncio.AbstractEventLoop, set[_Asked]] = {}
        self._ended: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()

    def ask(self, ask: Coroutine[Any, Any, Answer], loop: asyncio.AbstractEventLoop) -> _Asked | None:
        """``ask`` run on ``loop`` as a task, its question kept until it ends; None (``ask`` closed) when the
        loop's channel stopped."""
        with self._lock:
            if loop in self._ended or loop.is_closed():
                ask.close()
                return None
            asked = _Asked()
            self._asked.setdefault(loop, set()).add(asked)

        def start() -> None:
            with self._lock:
                if asked.outcome.done():  # declined by the stop before it was asked
                    ask.close()
                    return
                context = contextvars.copy_context()
                context.run(_ASKED.set, asked)
                asked.task = loop.create_task(ask, context=context)
            asked.task.add_done_callback(lambda task: self._finished(loop, asked, task))

        try:
            loop.call_soon_threadsafe(start)
        except RuntimeError:  # the loop closed meanwhile
            ask.close()
            asked.outcome.cancel()
            self._forget(loop, asked)
        return asked

    def _forget(self, loop: asyncio.AbstractEventLoop, asked: _Asked) -> None:
        with self._lock:
            waiting = self._asked.get(loop)
            if waiting is not None:
                waiting.discard(asked)
                if not waiting:
                    del self._asked[loop]

    def _finished(self, loop: asyncio.AbstractEventLoop, asked: _Asked, task: asyncio.Task[Answer]) -> None:
        """The question's task ended: its answer decides, unless the press or the stop already did."""
        self._forget(loop, asked)
        if task.cancelled():
            asked.outcome.cancel()
            return
        error = task.exception()
        try:
            if error is not None:
                asked.outcome.set_exception(error)
            else:
                asked.outcome.set_result(task.result())
        except concurrent.futures.InvalidStateError:
            pass

    def end(self, loop: asyncio.AbstractEventLoop) -> int:
        """``loop``'s channel stops: its questions not answered yet are declined (their threads woken, their tasks
        cancelled), later ones are not asked; how many were declined."""
        with self._lock:
            self._ended.add(loop)
            waiting = self._asked.pop(loop, set())
        declined = 0
        for asked in waiting:
            if not asked.outcome.cancel():  # answered already: the thread has that answer, the task ends itself
                continue
            declined += 1
            with self._lock:
                task = asked.task
            if task is not None:
                try:
                    loop.call_soon_threadsafe(task.cancel)
                except RuntimeError:  # the loop is closed: its tasks do not run any more
                    pass
        return declined


_QUESTIONS_ON_LOOPS = _QuestionsOnLoops()


def decline_questions_on(loop: asyncio.AbstractEventLoop) -> int:
    """At a channel's stop: every question a worker thread waits for on ``loop`` (the channel's) and the owner has
    not answered is declined now, and any asked there later is declined without being asked; how many were
    declined."""
    return _QUESTIONS_ON_LOOPS.end(loop)


class OpenQuestions:
    """The questions waiting for the owner's answer, each under a key, with the chat it was asked in.

    Used from the channel's event loop only (``approver`` is the one call from another thread)."""

    def __init__(self, timeout_seconds: float = TIMEOUT_SECONDS) -> None:
        self.timeout_seconds = timeout_seconds
        self._futures: dict[str, asyncio.Future[Answer]] = {}
        self._chats: dict[str, Hashable] = {}
        self._offers: set[str] = set()  # keys whose question offers "allow for this conversation"
        self._asked: dict[str, _Asked] = {}  # keys whose question a worker thread waits for (``approver``)

    def open(self, key: str, chat: Hashable, offer: bool = False) -> asyncio.Future[Answer]:
        """A new question under ``key``, asked in ``chat``; its answer is the future's result. ``offer``: it may
        be answered "allow for this conversation" (``offers_conversation`` of the request)."""
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._futures[key] = future
        self._chats[key] = chat
        asked = _ASKED.get()
        if asked is not None:
            self._asked[key] = asked
        if offer:
            self._offers.add(key)
        return future

    def close(self, key: str) -> None:
        self._futures.pop(key, None)
        self._chats.pop(key, None)
        self._offers.discard(key)
        self._asked.pop(key, None)

    def offered(self, key: str) -> bool:
        """The open question under ``key`` offers "allow for this conversation"."""
        return key in self._offers

    def is_open(self, key: str) -> bool:
        future = self._futures.get(key)
        return future is not None and not future.done()

    def answer(self, key: str, answer: Answer) -> bool:
        """Answer the question under ``key``; False when there is none open (expired, answered). An allowance
        the question did not offer confirms this call only. False too when the channel's stop declined the question
        in the same loop pass, before its task saw the cancel: the answer is one decision (``_Asked``). A no is the
        owner's (``OWNER_NO``: the gate keeps it for the call)."""
        return self._take(key, OWNER_NO if answer is False else answer)

    def _take(self, key: str, answer: Answer) -> bool:
        future = self._futures.get(key)
        if future is None or future.done():
            return False
        if answer == ALLOW_CONVERSATION and key not in self._offers:
            answer = True
        asked = self._asked.get(key)
        if asked is not None and not asked.take(answer):
            return False
        future.set_result(answer)
        return True

    def press(self, key: str, choice: str) -> str:
        """A button (``answer_of_choice``) pressed on the question under ``key``: what its message says now, the
        choice taken (an allowance the question did not offer: this call only), the bot's stop, or expired."""
        answer = answer_of_choice(choice)
        if answer == ALLOW_CONVERSATION and key not in self._offers:
            answer = True
        if self.answer(key, answer):
            return chosen_text(answer)
        # Not taken but still open: the bot's stop declined it in this very loop pass (its end is on the way).
        return STOPPED_UNANSWERED if self.is_open(key) else EXPIRED

    def decline_all(self, chat: Hashable) -> int:
        """Answer no to every open question in ``chat`` (the owner stopped the turn); how many there were."""
        keys = [key for key, asked_in in self._chats.items() if asked_in == chat]
        return sum(self._take(key, False) for key in keys)  # a stop, not the owner's no to the call

    async def ask_yes_no(self, key: str, send: Callable[[], Awaitable[object]], timeout: float) -> bool:
        """The contract's ``ask_yes_no`` where the answer is the owner's next message: a question under ``key``
        (``send`` asks it), True only for their yes within ``timeout`` seconds."""
        future = self.open(key, key)
        try:
            await send()
            try:
                return await asyncio.wait_for(future, timeout) is True
            except TimeoutError:
                return False
        finally:
            self.close(key)  # asked or not (a failed send): a later yes answers nothing

    async def ask_with_buttons(
        self,
        key: str,
        chat: Hashable,
        request: ApprovalRequest,
        post: Callable[[bool], Awaitable[Posted]],
        show: Callable[[Posted, Answer | None, str], Awaitable[None]],
        channel: str,
    ) -> Answer:
        """An ``ask`` question with buttons (Telegram, Slack), open under ``key`` while ``post(offers)`` sends it
        (the platform's handle of its message; ``offers``: "allow for this conversation" is one of its buttons)
        and the owner's press or reply answers it; then ``show(posted, answer, unanswered)`` updates the message
        (``answer`` None: none came, and ``unanswered`` says why: ``NO_ANSWER`` in time, ``STOPPED_UNANSWERED``
        when the bot's stop ended the question; best effort, never raises). False when it could not be asked
        (``DeliveryError``)."""
        future = self.open(key, chat, offers_conversation(request))
        posted: Posted | None = None
        answer: Answer | None = None
        unanswered = NO_ANSWER
        try:
            posted = await post(self.offered(key))
            answer = await self.wait(future)
            return False if answer is None else answer
        except DeliveryError as err:
            log.warning("%s: could not ask for confirmation in %s: %s", channel, chat, err)
            return False
        except asyncio.CancelledError:  # the channel's stop (decline_questions_on): no answer can come any more
            unanswered = STOPPED_UNANSWERED
            raise
        finally:
            self.close(key)
            if posted is not None:
                await show(posted, answer, unanswered)

    async def wait(self, future: asyncio.Future[Answer]) -> Answer | None:
        """The owner's answer, or None when none came within the timeout. (The stop cancels only a question not
        answered yet, ``_Asked``: a taken answer is never lost to it.)"""
        try:
            return await asyncio.wait_for(future, self.timeout_seconds)
        except TimeoutError:
            return None

    def approver(self, ask: Ask, loop: asyncio.AbstractEventLoop, where: str) -> Callable[[ApprovalRequest], Answer]:
        """A blocking ``approve`` for the agent's worker thread: ``ask`` runs on ``loop``; any failure is a no."""

        def approve(request: ApprovalRequest) -> Answer:
            asked = _QUESTIONS_ON_LOOPS.ask(ask(request), loop)
            try:
                if asked is None:
                    raise concurrent.futures.CancelledError
                return fail_closed(asked.outcome.result(self.timeout_seconds + 30))
            except concurrent.futures.CancelledError:
                log.info("approvals: the confirmation in %s is declined: the channel stops", where)
                return False
            except Exception:  # noqa: BLE001 - fail closed
                log.exception("approvals: the confirmation in %s failed", where)
                return False

        return approve


#: How a question asked in a chat without buttons is answered (``ReplyApprovals``).
HOW_TO_ANSWER = "Reply yes to confirm or no to decline."
HOW_TO_ANSWER_OR_ALLOW = (
    f"Reply yes to confirm, no to decline, or chat to allow it for this conversation ({ALLOWANCE})."
)
#: Sends a text to a chat of the channel; raises ``DeliveryError`` when it cannot.
SendText = Callable[[str, str], Awaitable[None]]


class ReplyApprovals:
    """Approvals where the platform has no buttons (Signal, Matrix, WhatsApp): the question goes to the chat,
    and the owner's next message there ("yes", "no", "chat" where offered) answers it, taken before the chat's
    queue (the turn waiting for it holds the queue) and no new turn (the channel hands it to ``resolve``). At
    most one open question per chat."""

    def __init__(
        self,
        channel: str,
        send: SendText,
        timeout_seconds: float = TIMEOUT_SECONDS,
        questions: OpenQuestions | None = None,
        how_to_answer: str = HOW_TO_ANSWER,
        how_to_answer_or_allow: str = HOW_TO_ANSWER_OR_ALLOW,
        part_chars: int | None = QUESTION_PART_CHARS,
        say: SendText | None = None,
    ) -> None:
        """``part_chars``: a question's messages at most (None: one, a mail or the terminal); ``say`` sends the parts
        before the last where ``send`` would make each a question (Discord's buttons)."""
        self.channel = channel
        self._send = send
        self._say = say
        self.part_chars = part_chars
        self._how = how_to_answer, how_to_answer_or_allow  # email says "reply to this mail ... on the first line"
        # A channel that asks other yes/no questions in the same chats (Matrix, WhatsApp) shares its own.
        self.questions = questions or OpenQuestions(timeout_seconds)

    def approver(
        self, chat: str, loop: asyncio.AbstractEventLoop, send: SendText | None = None
    ) -> Callable[[ApprovalRequest], Answer]:
        """A blocking callback for the agent's worker thread; ``send`` replaces the channel's for this turn's
        questions (Matrix asks in the turn's thread)."""
        return self.questions.approver(lambda request: self.ask(chat, request, send), loop, chat)

    async def ask(self, chat: str, request: ApprovalRequest, send: SendText | None = None) -> Answer:
        """Send the question and wait for the owner's answer (False on timeout or when it cannot be sent)."""
        send = send or self._send
        future = self.questions.open(chat, chat, offers_conversation(request))
        how = self._how[1] if offers_conversation(request) else self._how[0]
        *earlier, last = question_parts(request, how, self.part_chars)
        try:
            for part in earlier:
                await (self._say or send)(chat, part)
            await send(chat, last)
            answer = await self.questions.wait(future)
            if answer is None:
                await send(chat, NO_ANSWER)
                return False
            return answer
        except DeliveryError as err:
            log.warning("%s: could not ask for confirmation in %s: %s", self.channel, chat, err)
            return False
        finally:
            self.questions.close(chat)

    def owner_approver(
        self, owner: Callable[[], str | None], loop: asyncio.AbstractEventLoop
    ) -> Callable[[ApprovalRequest], Answer]:
        """Asks the owner in their own chat, from any thread (``ChannelJobs.ask_owner``: a served client's ``ask``
        call); ``owner`` is read when asking (Matrix learns the room); none known: declined, one log line."""

        async def ask(request: ApprovalRequest) -> Answer:
            chat = owner()
            if not chat:
                log.warning("%s: no chat of the owner's to ask for confirmation in; not done", self.channel)
                return False
            return await self.ask(chat, request)

        return self.questions.approver(ask, loop, f"the {self.channel} owner's chat")

    def resolve(self, chat: str, text: str) -> bool:
        """Answer an open question of ``chat`` with ``text``; True when the message was that answer."""
        answer = answer_of(text, self.questions.offered(chat))
        return answer is not None and self.questions.answer(chat, answer)
