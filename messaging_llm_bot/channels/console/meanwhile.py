"""Lines typed while an answer is written (the interactive terminal chat): busy modes (conversation/busy.py).

The terminal's line discipline holds what the owner types until Enter; while a turn runs, the chat's main
thread looks for such a line between its other duties (an approval's question, Ctrl-C) and never blocks on it.
A line for the model is stored in the inbox first, then handed to the running turn by the chat's busy mode
(``steer``: it joins the answer at its next step; ``interrupt``: the model call in flight is cut and the turn
goes on with it); a line that does not join (``queue``, or the turn ended first) waits and is answered next,
in order. ``/stop`` typed meanwhile stops the answer as Ctrl-C does; other commands wait their turn. A piped
(scripted) chat reads its next line only after the reply: each line is its own turn there.
"""

from __future__ import annotations

import contextlib
import select
import time
from collections import deque
from collections.abc import Iterator
from typing import TextIO

from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.conversation.busy import BusyTurns
from messaging_llm_bot.conversation.chatflags import ChatFlags
from messaging_llm_bot.conversation.held import storage_error_text
from messaging_llm_bot.conversation.runtime import Runtime

#: What the terminal chat's one user is called in a turn (the agent lets only the turn's sender steer it).
USER = "owner"
JOINED_TEXT = "… added to the answer in progress"


def line_ready(stdin: TextIO) -> bool:
    """True when a whole line (or the end of input) can be read from ``stdin`` without waiting; False where
    that cannot be known (no file descriptor): then nothing is read while an answer is written."""
    try:
        ready, _, _ = select.select([stdin.fileno()], [], [], 0)
    except (AttributeError, OSError, ValueError):
        return False
    return bool(ready)


def joinable(text: str) -> bool:
    """A line that may join the running turn, or a turn that may be joined: words for the model, no command."""
    return bool(text) and not text.startswith("/")


class TypedMeanwhile:
    """The lines typed while the terminal chat answers: joined to the running turn, or waiting to be next."""

    def __init__(self, runtime: Runtime, inbox: Inbox, conversation_id: str, stdin: TextIO, progress: TextIO):
        self.runtime, self.inbox, self.conversation_id = runtime, inbox, conversation_id
        self.stdin, self.progress = stdin, progress
        self.busy: BusyTurns[InboxItem] = BusyTurns()
        self.flags = ChatFlags(runtime.workspace)  # /busy's choice for the terminal chat
        #: Typed meanwhile and not joined: answered next, in order (a command as its text, a message as its item).
        self.waiting: deque[str | InboxItem] = deque()
        self.ended = False  # Ctrl-D typed meanwhile: the chat ends after the answer
        self._merged: list[str] = []

    def poll(self) -> None:
        """Take a line typed meanwhile, if one is ready (never blocks)."""
        if self.ended or not line_ready(self.stdin):
            return
        line = self.stdin.readline()
        if not line:
            self.ended = True
            return
        text = line.strip()
        if not text:
            return
        if text.lower() == "/stop":
            self.runtime.agent.stop(self.conversation_id)
            print("… stopping", file=self.progress, flush=True)
            return
        if not joinable(text):
            self.waiting.append(text)
            return
        try:
            item = self.inbox.accept(f"console:{time.time_ns()}", self.conversation_id, {"text": text})
            assert item is not None  # a new id each time: never a re-delivery
        except OSError as err:
            print(storage_error_text(err), file=self.progress, flush=True)
            return
        if self.busy.join(self.runtime, self.flags, self.conversation_id, USER, text, item.item_id, item):
            print(JOINED_TEXT, file=self.progress, flush=True)
        else:
            self.waiting.append(item)

    @contextlib.contextmanager
    def turn(self, text: str) -> Iterator[None]:
        """The block runs a turn that later lines may join; after it, the items its reply answers are kept
        (``answered``) and those offered but not answered go first in ``waiting``."""
        failed = True
        with self.busy.turn(self.conversation_id, USER, joinable(text)) as running:
            try:
                yield
                failed = False
            finally:
                if running is not None:
                    merged, later = running.outcome(failed)
                    self._merged = [one.item_id for one in merged]
                    self.waiting.extendleft(reversed(later))

    def answered(self) -> list[str]:
        """The items the last turn's reply answers besides its own (recorded with the reply)."""
        return list(self._merged)

    def complete_answered(self) -> None:
        """Complete them, once the reply that answers them is printed."""
        merged, self._merged = self._merged, []
        for one in merged:
            self.inbox.complete(one)
