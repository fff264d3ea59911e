"""The terminal chat's channel: conversation/owner_chat.py's ``OwnerChatService`` on a thread of its own, as the
main thread is the terminal's (chat.py); what it shares with every channel (intake, busy modes, the reply's flow,
the one scheduler): docs/channels.md. The terminal's own: replies, job runs', reminders and notices printed above
the prompt (one not printed once the chat is leaving stays in the inbox or due), a question answered at the prompt
([y/N]), for its own turns and a served client's ``approve_in_chat``. Piped, it runs no jobs and confirms nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from dataclasses import dataclass
from typing import TextIO

from assistant_framework.inbox import InboxItem
from assistant_framework.media.files_out import FileToSend
from messaging_llm_bot.agent.guard import ApprovalRequest
from messaging_llm_bot.agent.turn import AgentEvent, error_for_user
from messaging_llm_bot.channels.console.extras import LiveReply
from messaging_llm_bot.channels.contract import Capabilities
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
from messaging_llm_bot.conversation.turn import TurnInput

CHAT = "console"  # the one conversation: its queue, its inbox items and its route (conversation/routes.py)
#: What the terminal chat can do (channels/contract.py): one reader, text only, the answer printed as it
#: streams (appended, never edited), a reply printed whole (a bound, not a platform limit), approvals typed y/n.
#: A file "sent" to the terminal is its path printed: nothing is copied, so no size bound beyond the workspace's.
CAPABILITIES = Capabilities(
    max_message_length=1_000_000, length_unit="chars", media_out=frozenset({"file"}), max_file_bytes=1 << 40
)
JOINED_TEXT = "… added to the answer in progress"
FINISH_SECONDS = 2.0  # at the chat's end, for a job run being finished (a turn still running is cut off)


# A reminder set outside the chat (the web page, the CLI, a hand edit) is planned within this; the other
# channels read the store every 30 s (conversation/reminders.py), the terminal, where one person waits at the
# prompt, as before its move onto the shared pieces.
REMINDER_POLL_SECONDS = 5.0


@dataclass(frozen=True)
class Terminal:
    """The chat's streams; ``interactive`` at a terminal (False: a scripted chat)."""

    stdin: TextIO
    stdout: TextIO
    stderr: TextIO
    interactive: bool = False


def progress_line(event: AgentEvent) -> str | None:
    """A short stderr line for a progress event, or None for events not worth showing."""
    if event.kind == "thinking":
        return f"… thinking (round {event.data.get('round')})"
    if event.kind == "skill_call":
        return f"… running skill {event.data.get('skill')}"
    if event.kind == "skill_result" and not event.data.get("ok"):
        skill = str(event.data.get("skill"))
        return f"… skill {skill} failed: {error_for_user(skill, str(event.data.get('summary')))}"
    return None


def print_block(out: TextIO, text: str) -> None:
    """``text`` and an empty line below it, in one write: print's two (the text ending a line, then its own line end)
    reached the prompt as two lines to print above it, the prompt erased and drawn again between them (a screen
    read between showed the block without the prompt below it)."""
    out.write(text.rstrip("\n") + "\n\n")
    out.flush()


class ConsoleTurns(OwnerChatTurns):
    """The terminal chat's turns (conversation/owner_chat.py): a typed message's reply printed as a block (the reply,
    an empty line) after what streamed of it; a job run's, a notice's above the prompt. Each printed once:
    the ledger records it."""

    REREAD = True  # a job run handed over again may have been answered meanwhile
    MAX_FILE_BYTES = CAPABILITIES.max_file_bytes

    def __init__(self, service: ConsoleService) -> None:
        super().__init__(service.runtime, service.inbox, CHAT, CHAT)
        self.service, self.term = service, service.term
        self.busy = BusyTurns(lambda _item: print(JOINED_TEXT, file=self.term.stderr, flush=True))
        self.live: LiveReply | None = None  # the typed message's answer as it streams (one at a time)

    async def turn_input(self, item: InboxItem) -> TurnInput | str:
        self.live = LiveReply(self.term.stdout) if self.term.interactive else None
        return await super().turn_input(item)

    def on_event(self, event: AgentEvent) -> None:
        """The answer as it streams, and progress on stderr (at a terminal; from the turn's worker thread)."""
        live = self.live
        if live is None:
            return
        if event.kind == "delta":
            live.delta(str(event.data.get("text", "")))
        elif line := progress_line(event):
            print(line, file=self.term.stderr, flush=True)

    async def show_file(self, item: InboxItem, one: FileToSend) -> str:
        # The terminal is on the workspace's machine: the file is where it is, its path is what to show.
        caption = f" ({one.caption})" if one.caption else ""
        print(f"📎 {one.path}{caption}", file=self.term.stderr, flush=True)
        return str(one.path)

    async def deliver(self, item: InboxItem, text: str) -> bool:
        """Print a reply once (not again when the ledger shows it printed before a crash): a typed message's at
        once, a job run's or a notice's above the prompt; False when the chat is leaving (it stays)."""
        if await asyncio.to_thread(self.inbox.parts_sent, item.item_id) > 0:
            return True
        if not (is_job_item(item) or is_notice_item(item)):
            live, self.live = self.live, None  # a replay's reply: nothing of it was shown
            print_block(self.term.stdout, live.rest(text) if live is not None else text)
        elif not await self.service.show(terminal_text(text)):  # a reply's Markdown as the terminal shows it
            return False
        await self.record_part(item.item_id, 0, time.time_ns() // 1_000_000)  # when it was shown
        return True

    async def tell(self, item: InboxItem, text: str) -> None:
        await self.service.tell(text)


class ConsoleService(OwnerChatService):
    """The terminal chat's channel: ``start()`` serves on a thread of its own, ``submit`` hands it a typed line."""

    NAME, TITLE = "console", "the terminal chat"  # no LOCK_FILE: the chat holds its lock (chat.py)
    CONVERSATION = PREFIX = CHAT
    WHERE = "the terminal"

    def __init__(self, runtime: Runtime, term: Terminal) -> None:
        super().__init__(runtime, manage_runtime=False)  # the CLI shuts the runtime down, with its own bound
        self.shutdown.timeout = FINISH_SECONDS  # leaving is at once: a run cut off is made at the next start
        self.term = term
        self.reminder_poll_seconds = REMINDER_POLL_SECONDS
        self.asked = threading.Event()  # a question is shown: the owner's next line answers it
        self._asking = asyncio.Lock()  # one question at a time
        self._taking = asyncio.Lock()  # typed lines taken in the order typed
        offer = f"(c: allow for this conversation: {ALLOWANCE}) [y/N/c]"
        self.approvals = ReplyApprovals(
            self.NAME, self._ask, questions=self.questions, how_to_answer="[y/N]", how_to_answer_or_allow=offer
        )
        self.turns: ConsoleTurns
        self.intake: ChannelIntake

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

    def make_turns(self) -> ConsoleTurns:
        # A message the inbox cannot store is held (the chat told once) and stored again after a pause.
        turns = ConsoleTurns(self)
        self.intake = self.channel_intake(turns, hold=True)
        return turns

    def runs_jobs(self) -> bool:
        return self.term.interactive  # scripted: no jobs, notices or questions (only a person can confirm)

    def answer_left(self, item: InboxItem) -> None:
        text = str(item.payload.get("text", ""))[:80]
        print(f"(answering a message left unanswered by the last run: {text!r})", file=self.term.stderr, flush=True)
        super().answer_left(item)

    async def send_notice(self, text: str) -> bool:
        """A notice (a collector's, the spending caps') through the inbox like a reply, printed above the prompt."""
        return await self.turns.queue_notice(self.side, CHAT, text)

    async def show(self, text: str) -> bool:
        """Print ``text`` as a block of its own above the prompt; False when the chat ended first."""
        if not self.term.interactive or self.shutdown.stopping:  # leaving: a job's reply stays in the inbox
            return False
        print_block(self.term.stdout, text)
        return True

    async def tell(self, text: str) -> bool:
        """A reminder's or the bot's Markdown printed above the prompt; False when the chat is leaving."""
        return await self.show(terminal_text(text))

    # -- the main thread's calls ----------------------------------------------------------------------------

    def submit(self, text: str) -> concurrent.futures.Future[None]:
        """Take a typed line (none: ""); the future is done once the chat's queue is empty: it and all before
        it answered."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(self._typed(text), self._loop)

    def stop_turn(self) -> bool:
        """Stop the answer being written (Ctrl-C, /stop): a question open is declined."""
        self.asked.clear()
        return super().stop_turn()

    def answer_question(self, text: str) -> bool:
        """The owner's line answers the question shown: y (c where offered); anything else is no. False when no
        question was open any more (the line is then a message)."""
        self.asked.clear()
        word = "chat" if text.strip().lower() == "c" else text

        async def answer() -> bool:
            return self.approvals.resolve(CHAT, word) or self.questions.answer(CHAT, False)

        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(answer(), self._loop).result(10)

    # -- on the loop --------------------------------------------------------------------------------------

    async def _typed(self, text: str) -> None:
        async with self._taking:
            if text.startswith("/"):  # a command waits its turn as a message does
                self.tasks.spawn(CHAT, self._command(text), owner=True, exempt=True)
            elif text:
                source = f"console:{time.time_ns()}"
                arrival = Arrival(source, CHAT, {"text": text}, OWNER, True, text, source, True)
                await self.intake.take(arrival, self._say)
        while self.queues.pending(CHAT):
            await asyncio.sleep(0.02)

    async def _command(self, text: str) -> None:
        reply = await asyncio.to_thread(run_command, self.runtime, CHAT, text)
        # A command's text without its markup (no ** or escaping backslashes).
        await self._say(terminal_text(reply) if reply is not None else unknown_command_text(text.split()[0]))

    async def _say(self, text: str) -> None:
        print_block(self.term.stdout, text)

    async def ask_owner(self, request: ApprovalRequest) -> Answer:
        async with self._asking:
            return await self.approvals.ask(CHAT, request)

    async def _ask(self, chat: str, question: str) -> None:
        """Show a question above the prompt: the owner's next line answers it."""
        if not await self.show(question):
            raise DeliveryError("the chat ended")
        self.asked.set()
