"""Busy modes: what a message does that the same person sends in a chat while a turn runs there.

``steer`` (the default, ``runtime.busy_mode``): it enters the running turn at its next round boundary
(agent/steering.py) and the one reply answers both; ``interrupt``: the model call in flight is hung up and the
turn goes on at once with it; ``queue``: it waits its turn in the chat's queue, as every message did before.
``/busy queue|steer|interrupt`` sets it for one chat (its flags, conversation/chatflags.py).

Every channel does it with the same three calls, here: at intake, a stored message is handed to the
sender's running turn (``BusyTurns.join``) instead of being queued; a turn that later messages may join runs
inside ``BusyTurns.turn``, and its ``RunningTurn.outcome`` says which items its reply answers (recorded with the
reply on the turn's inbox item, ``Inbox.record_reply(merged=...)``, so each leaves the inbox only when the reply
that answers it was delivered) and which were offered but never entered (the turn failed or ended first:
each answered in its own turn right after, in order); at start, ``answered_by_recorded`` names the items a
recorded reply answers, completed with it rather than answered again. Other people's messages, other chats,
group chats, files and job runs are never merged.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from assistant_framework.config.settings.runtime import BUSY_MODES
from messaging_llm_bot.conversation.chatflags import ChatFlags
from messaging_llm_bot.conversation.chatqueue import max_pending

if TYPE_CHECKING:  # pragma: no cover
    from assistant_framework.inbox import InboxItem
    from messaging_llm_bot.agent.steering import Steered
    from messaging_llm_bot.conversation.runtime import Runtime

BUSY_FLAG = "busy"
T = TypeVar("T")


def busy_mode(runtime: Runtime, flags: ChatFlags, conversation_id: str) -> str:
    """This chat's busy mode: its /busy choice, else ``runtime.busy_mode``."""
    chosen = flags.get(conversation_id, BUSY_FLAG)
    return chosen if isinstance(chosen, str) and chosen in BUSY_MODES else runtime.settings.runtime.busy_mode


def busy_command(runtime: Runtime, flags: ChatFlags, conversation_id: str, args: str) -> str:
    """``/busy`` (this chat's mode) or ``/busy queue|steer|interrupt|default``."""
    asked = args.strip().lower()
    now = busy_mode(runtime, flags, conversation_id)
    if not asked:
        return f"Busy mode here: {now}. /busy steer, /busy interrupt or /busy queue changes it. {_explained(now)}"
    if asked not in (*BUSY_MODES, "default"):
        return "Usage: /busy steer, /busy interrupt, /busy queue (or /busy default)."
    try:
        flags.set(conversation_id, BUSY_FLAG, None if asked == "default" else asked)
    except OSError as err:
        return f"I could not save the busy mode ({err}); it stays {now}."
    mode = busy_mode(runtime, flags, conversation_id)
    return f"Busy mode here: {mode}. {_explained(mode)}"


def _explained(mode: str) -> str:
    if mode == "steer":
        return "A message you send while I answer is added to that answer at its next step."
    if mode == "interrupt":
        return "A message you send while I answer cuts what I'm doing, and I answer both at once."
    return "A message you send while I answer waits, and is answered after."


@dataclass
class RunningTurn(Generic[T]):
    """One chat's turn as its channel runs it: who sent it, and the messages (the channel's items) that were
    offered to it, each with the agent's handle."""

    user_id: int | str | None
    offered: list[tuple[T, Steered]] = field(default_factory=list)

    def merged(self) -> list[T]:
        """The items the turn's reply answers (they entered it)."""
        return [item for item, handle in self.offered if handle.taken]

    def left(self) -> list[T]:
        """The items offered that never entered (the turn ended first): to be answered in their own turns."""
        return [item for item, handle in self.offered if not handle.taken]

    def outcome(self, failed: bool) -> tuple[list[T], list[T]]:
        """(the items the turn's reply answers, those to answer each in its own turn after it). A turn that
        failed answers none: its reply is an apology, so every message offered to it gets a turn of its own."""
        if failed:
            return [], [item for item, _ in self.offered]
        return self.merged(), self.left()


class BusyTurns(Generic[T]):
    """The turns running in one channel's chats, to which a new message may be added (thread-safe). ``joined``
    is called with each message added (the terminal says so on stderr)."""

    def __init__(self, joined: Callable[[T], None] = lambda _item: None) -> None:
        self._running: dict[str, RunningTurn[T]] = {}
        self._lock = threading.Lock()
        self._joined = joined

    def started(self, conversation_id: str, user_id: int | str | None) -> RunningTurn[T]:
        """A turn of ``user_id`` starts in ``conversation_id``."""
        turn: RunningTurn[T] = RunningTurn(user_id)
        with self._lock:
            self._running[conversation_id] = turn
        return turn

    @contextlib.contextmanager
    def turn(self, conversation_id: str, user_id: int | str | None, joinable: bool) -> Iterator[RunningTurn[T] | None]:
        """A turn runs in the block; later messages of ``user_id`` may join it when ``joinable`` (a person's own
        text in a private chat), else the block gets None and nothing joins."""
        if not joinable:
            yield None
            return
        running = self.started(conversation_id, user_id)
        try:
            yield running
        finally:
            self.ended(conversation_id, running)

    def ended(self, conversation_id: str, turn: RunningTurn[T]) -> None:
        with self._lock:
            if self._running.get(conversation_id) is turn:
                del self._running[conversation_id]

    def joined(self, conversation_id: str) -> int:
        """How many messages were handed to the turn running in the chat (0 when none runs)."""
        with self._lock:
            turn = self._running.get(conversation_id)
            return len(turn.offered) if turn is not None else 0

    def running(self, conversation_id: str) -> bool:
        """True while a turn runs in the chat (cheap: asked for every message before it is queued)."""
        with self._lock:
            return conversation_id in self._running

    def join(
        self,
        runtime: Runtime,
        flags: ChatFlags,
        conversation_id: str,
        user_id: int | str | None,
        text: str,
        message_id: int | str | None,
        item: T,
    ) -> bool:
        """Hand a stored message (``item``) to the turn of the same person running in its chat, by the chat's
        busy mode, instead of queueing it; False when it waits its turn. The chat's flags are read only while a
        turn runs there. Call it in arrival order, and only for a joinable message (a text of the sender's own
        in a private chat: no file, command, forward, group or job run)."""
        if not self.running(conversation_id):
            return False
        mode = busy_mode(runtime, flags, conversation_id)
        return self.offer(runtime, mode, conversation_id, user_id, text, message_id, item)

    def offer(
        self,
        runtime: Runtime,
        mode: str,
        conversation_id: str,
        user_id: int | str | None,
        text: str,
        message_id: int | str | None,
        item: T,
    ) -> bool:
        """Add ``text`` (its inbox ``item``) to the turn running in the chat; False when the mode is ``queue``,
        no turn of this sender runs there, or it has ended (the message then waits its turn)."""
        if mode == "queue":
            return False
        with self._lock:
            turn = self._running.get(conversation_id)
            if turn is None or turn.user_id is None or str(turn.user_id) != str(user_id):
                return False
            if len(turn.offered) >= max_pending(runtime.settings):
                return False  # bounded as a chat's queue is: the rest waits there (and its bound applies)
            handle = runtime.agent.steer(conversation_id, text, user_id, message_id, interrupt=mode == "interrupt")
            if handle is None:
                return False
            turn.offered.append((item, handle))
        self._joined(item)
        return True


def answered_by_recorded(items: Iterable[InboxItem]) -> set[str]:
    """The ids of ``items`` that a reply recorded on another of them answers (they joined its turn): a replay
    at start completes them with that reply instead of answering them again."""
    pending = list(items)
    ids = {item.item_id for item in pending}
    return {one for item in pending if item.reply is not None for one in item.merged if one in ids}
