"""The terminal chat's channel, on conversation/line_chat.py's ``LineChatService`` (the main thread is the
terminal's: chat.py): replies, job runs', reminders and notices printed above the prompt, the answer printed as it
streams, notes on stderr, a file "sent" shown by its path. Piped, it runs no jobs and confirms nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO

from assistant_framework.inbox import InboxItem
from assistant_framework.media.files_out import FileToSend
from messaging_llm_bot.agent.turn import AgentEvent
from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.appended import LiveReply
from messaging_llm_bot.conversation.line_chat import LineChatService, LineChatTurns
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import TurnInput

CHAT = "console"  # the one conversation: its queue, its inbox items and its route (conversation/routes.py)
#: What the terminal chat can do (channels/contract.py): one reader, text only, the answer printed as it
#: streams (appended, never edited), a reply printed whole (a bound, not a platform limit), approvals typed y/n.
#: A file "sent" to the terminal is its path printed: nothing is copied, so no size bound beyond the workspace's.
CAPABILITIES = Capabilities(
    max_message_length=1_000_000, length_unit="chars", media_out=frozenset({"file"}), max_file_bytes=1 << 40
)
FINISH_SECONDS = 2.0  # at the chat's end, for a job run being finished (a turn still running is cut off)
# A reminder set outside the chat (the web page, the CLI, a hand edit) is planned within this: sooner than the
# other channels' reading of the store (conversation/reminders.py), as one person waits at the prompt.
REMINDER_POLL_SECONDS = 5.0


@dataclass(frozen=True)
class Terminal:
    """The chat's streams; ``interactive`` at a terminal (False: a scripted chat)."""

    stdin: TextIO
    stdout: TextIO
    stderr: TextIO
    interactive: bool = False


def print_block(out: TextIO, text: str) -> None:
    """``text`` and an empty line below it, in one write: print's two (the text ending a line, then its own line end)
    reached the prompt as two lines to print above it, the prompt erased and drawn again between them (a screen
    read between showed the block without the prompt below it)."""
    out.write(text.rstrip("\n") + "\n\n")
    out.flush()


class ConsoleTurns(LineChatTurns):
    """The terminal chat's turns: a typed message's reply printed as a block (the reply, an empty line) after what
    streamed of it."""

    MAX_FILE_BYTES = CAPABILITIES.max_file_bytes

    def __init__(self, service: ConsoleService) -> None:
        super().__init__(service)
        self.term = service.term
        self.live: LiveReply | None = None  # the typed message's answer as it streams (one at a time)

    async def turn_input(self, item: InboxItem) -> TurnInput | str:
        self.live = LiveReply(self.term.stdout, self.term.stderr) if self.term.interactive else None
        return await super().turn_input(item)

    def on_event(self, event: AgentEvent) -> None:
        live = self.live  # the answer as it streams, progress notes on stderr (at a terminal)
        if live is not None:
            live.on_event(event)

    async def show_file(self, item: InboxItem, one: FileToSend) -> str:
        # The terminal is on the workspace's machine: the file is where it is, its path is what to show.
        caption = f" ({one.caption})" if one.caption else ""
        self.service.note(f"📎 {one.path}{caption}")
        return str(one.path)

    async def show_reply(self, text: str) -> None:
        live, self.live = self.live, None  # a replay's reply: nothing of it was shown
        print_block(self.term.stdout, live.rest(text) if live is not None else text)


class ConsoleService(LineChatService):
    """The terminal chat's channel: ``start()`` serves on a thread of its own, ``submit`` hands it a typed line."""

    NAME, TITLE = "console", "the terminal chat"  # no LOCK_FILE: the chat holds its lock (chat.py)
    CONVERSATION = PREFIX = CHAT
    WHERE = "the terminal"
    TURNS = ConsoleTurns

    def __init__(self, runtime: Runtime, term: Terminal) -> None:
        super().__init__(runtime, manage_runtime=False)  # the CLI shuts the runtime down, with its own bound
        self.shutdown.timeout = FINISH_SECONDS  # leaving is at once: a run cut off is made at the next start
        self.term = term
        self.reminder_poll_seconds = REMINDER_POLL_SECONDS

    def runs_jobs(self) -> bool:
        return self.term.interactive  # scripted: no jobs, notices or questions (only a person can confirm)

    async def say(self, text: str) -> None:
        print_block(self.term.stdout, text)

    def note(self, text: str) -> None:
        print(text, file=self.term.stderr, flush=True)
