"""The owner's chat fed line by line from a thread outside its loop (the terminal chat's main thread reads what
is typed, channels/console/chat.py): the channel serves on a thread of its own (``start``); a line handed on
(``submit``) is a /command answered in the chat's order or a message through the intake, held while the inbox
cannot store it; a question of an ``ask`` call is shown as a block and answered by the owner's next line
(``asked``, ``answer_question``); ``stop_until`` stops the answer until the lines sent before are answered, and
``leave_now`` cuts the running turn off (its message stays in the inbox). A reply is shown whole and once (the
ledger); a job run's, a notice's or a reminder's only while a person reads the chat and it is not leaving.
The channel gives how a block is shown (``say``), a note beside them (``note``) and its turns' own parts."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Sequence

from assistant_framework.inbox import InboxItem
from messaging_llm_bot.agent.guard import ApprovalRequest
from messaging_llm_bot.conversation.approvals import ALLOWANCE, Answer, ReplyApprovals
from messaging_llm_bot.conversation.busy import BusyTurns
from messaging_llm_bot.conversation.commands import run_command, unknown_command_text
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.intake import Arrival, ChannelIntake
from messaging_llm_bot.conversation.item_turns import is_notice_item
from messaging_llm_bot.conversation.job_runs import is_job_item
from messaging_llm_bot.conversation.markup import terminal_text
from messaging_llm_bot.conversation.owner_chat import OWNER, OwnerChatService, OwnerChatTurns
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import request_stop

#: How often a stop is made again while the lines sent before it are not answered yet.
STOP_AGAIN_SECONDS = 0.1
#: The note of a line that joined the answer being written (busy modes: the chat can show no reaction).
JOINED_TEXT = "… added to the answer in progress"


class LineChatTurns(OwnerChatTurns):
    """A line chat's turns: a typed message's reply shown by the channel (``show_reply``), a job run's or a
    notice's as a block of its own (the service's ``show``); each once, as the ledger records it."""

    REREAD = True  # a job run handed over again may have been answered meanwhile

    def __init__(self, service: LineChatService) -> None:
        super().__init__(service.runtime, service.inbox, service.NAME, service.CONVERSATION)
        self.service = service
        self.busy = BusyTurns(lambda _item: service.note(JOINED_TEXT))

    async def deliver(self, item: InboxItem, text: str) -> bool:
        """Show a reply once (not again when the ledger shows it shown before a crash); False when the chat is
        leaving (it stays in the inbox)."""
        if await asyncio.to_thread(self.inbox.parts_sent, item.item_id) > 0:
            return True
        if not (is_job_item(item) or is_notice_item(item)):
            await self.show_reply(text)
        elif not await self.service.show(terminal_text(text)):  # a reply's Markdown as plain text
            return False
        await self.record_part(item.item_id, 0, time.time_ns() // 1_000_000)  # when it was shown
        return True

    async def show_reply(self, text: str) -> None:
        """Show a typed message's reply (also in a chat that runs no jobs)."""
        raise NotImplementedError

    async def tell(self, item: InboxItem, text: str) -> None:
        await self.service.tell(text)


class LineChatService(OwnerChatService):
    """The running line chat: ``start()`` serves on a thread of its own; the rest is called from the thread that
    reads the lines."""

    HOW_TO_ANSWER = "[y/N]"
    HOW_TO_ANSWER_OR_ALLOW = f"(c: allow for this conversation: {ALLOWANCE}) [y/N/c]"
    TURNS: type[LineChatTurns] = LineChatTurns  # the channel's own

    turns: LineChatTurns
    intake: ChannelIntake

    def __init__(self, runtime: Runtime, *, manage_runtime: bool = True) -> None:
        super().__init__(runtime, manage_runtime=manage_runtime)
        self.asked = threading.Event()  # a question is shown: the owner's next line answers it
        self._asking = asyncio.Lock()  # one question at a time
        self._taking = asyncio.Lock()  # lines taken in the order sent
        self.approvals = ReplyApprovals(
            self.NAME,
            self._ask,
            questions=self.questions,
            how_to_answer=self.HOW_TO_ANSWER,
            how_to_answer_or_allow=self.HOW_TO_ANSWER_OR_ALLOW,
            part_chars=None,  # one block, however long
        )

    def make_turns(self) -> LineChatTurns:
        # A line the inbox cannot store is held (the chat told once) and stored again after a pause: it is sent once.
        turns = self.TURNS(self)
        self.intake = self.channel_intake(turns, hold=True)
        return turns

    async def say(self, text: str) -> None:
        """Show ``text`` as a block of its own (a command's answer, the intake's word)."""
        raise NotImplementedError

    def note(self, text: str) -> None:
        """A short line beside the chat's blocks (what it does unasked: a line joined, a message answered)."""
        raise NotImplementedError

    def answer_left(self, item: InboxItem) -> None:
        text = str(item.payload.get("text", ""))[:80]
        self.note(f"(answering a message left unanswered by the last run: {text!r})")
        super().answer_left(item)

    def start(self) -> None:
        """Serve (``run``) on a thread of its own; returns once it serves (or failed: ``stopped`` is set)."""
        threading.Thread(target=self.run, name=self.NAME, daemon=True).start()
        self.ready.wait()

    def leave_now(self) -> None:
        """Leave while a turn runs (a second Ctrl-C, SIGTERM): it is cut off, its message stays in the inbox."""

        def cut_off() -> None:
            self.begin_shutdown()
            self.begin_shutdown()  # the second: the turn running is cancelled at once

        request_stop(self._loop, cut_off, self.stopped, 10)

    async def send_notice(self, text: str) -> bool:
        """A notice (a collector's, the spending caps') through the inbox like a reply, shown as a block."""
        return await self.turns.queue_notice(self.side, self.CONVERSATION, text)

    async def show(self, text: str) -> bool:
        """Show ``text`` as a block of its own; False when no one reads the chat or it is leaving (a job's reply
        then stays in the inbox, a reminder due)."""
        if not self.runs_jobs() or self.shutdown.stopping:
            return False
        await self.say(text)
        return True

    async def tell(self, text: str) -> bool:
        """A reminder's or the bot's Markdown shown as plain text; False when the chat is leaving."""
        return await self.show(terminal_text(text))

    # -- the reading thread's calls ---------------------------------------------------------------------------

    def submit(self, text: str) -> concurrent.futures.Future[None]:
        """Take a line (none: ""); the future is done once the chat's queue is empty: it and all before it
        answered."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(self._taken(text), self._loop)

    def stop_turn(self) -> bool:
        """Stop the answer being written (Ctrl-C, /stop): a question open is declined."""
        self.asked.clear()
        return super().stop_turn()

    def stop_until(self, pending: Sequence[concurrent.futures.Future[None]]) -> None:
        """Stop the answer being written, and again until the lines sent before (``pending``) are answered: the
        turn may not have started when the stop came."""
        self.stop_turn()

        def again() -> None:
            while concurrent.futures.wait(pending, STOP_AGAIN_SECONDS).not_done:
                self.runtime.agent.stop(self.CONVERSATION)

        threading.Thread(target=again, name=f"{self.NAME}-stop", daemon=True).start()

    def answer_question(self, text: str) -> bool:
        """The owner's line answers the question shown: y (c where offered); anything else is no. False when no
        question was open any more (the line is then a message)."""
        self.asked.clear()
        word = "chat" if text.strip().lower() == "c" else text

        async def answer() -> bool:
            chat = self.CONVERSATION
            return self.approvals.resolve(chat, word) or self.questions.answer(chat, False)

        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(answer(), self._loop).result(10)

    # -- on the loop ------------------------------------------------------------------------------------------

    async def _taken(self, text: str) -> None:
        chat = self.CONVERSATION
        async with self._taking:
            if text.startswith("/"):  # a command waits its turn as a message does
                self.tasks.spawn(chat, self._command(text), owner=True, exempt=True)
            elif text:
                source = f"{self.NAME}:{time.time_ns()}"
                arrival = Arrival(source, chat, {"text": text}, OWNER, True, text, source, True)
                await self.intake.take(arrival, self.say)
        while self.queues.pending(chat):
            await asyncio.sleep(0.02)

    async def _command(self, text: str) -> None:
        reply = await asyncio.to_thread(run_command, self.runtime, self.CONVERSATION, text)
        # A command's text without its markup (no ** or escaping backslashes).
        await self.say(terminal_text(reply) if reply is not None else unknown_command_text(text.split()[0]))

    async def ask_owner(self, request: ApprovalRequest) -> Answer:
        async with self._asking:
            return await self.approvals.ask(self.CONVERSATION, request)

    async def _ask(self, chat: str, question: str) -> None:
        """Show a question as a block: the owner's next line answers it."""
        if not await self.show(question):
            raise DeliveryError("the chat ended")
        self.asked.set()
