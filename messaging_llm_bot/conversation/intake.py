"""The end of a channel's intake, the same on every channel whose turn runner is an ``ItemTurns`` (docs/channels.md,
"The life of a message"): once the channel judged a message (allowed, addressed, no command, no answer to an
open question), it is taken once (the platform's id), refused beyond its chat's bound (the chat told once per
backlog), stored in the durable inbox (held while the inbox cannot store: conversation/held.py), then handed
to the sender's running turn (busy modes, conversation/busy.py) or queued in its chat. A platform told that a
message arrived only once it is stored (Telegram: the next ``getUpdates`` confirms what the last one returned)
stores a batch first (``store_all``) and hands each item on in its chat's order later (``take`` with
``stored``). A ``/command`` (typed as a message, or Telegram's bot command read from its entity) is answered
here too: ``/stop`` at once, the others in the chat's order. At start, what the last run left is answered
first (``replay``), and a job run takes its place in the owner's queue (``start_job``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from assistant_framework.inbox import AcceptBusy, Inbox, InboxItem
from assistant_framework.inbox.item import InboxPayload
from messaging_llm_bot.conversation import commands as texts
from messaging_llm_bot.conversation.busy import answered_by_recorded
from messaging_llm_bot.conversation.chatqueue import ChatQueues
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.held import StorageOutage, held_text
from messaging_llm_bot.conversation.item_turns import ItemTurns, is_notice_item
from messaging_llm_bot.conversation.job_runs import is_job_item

log = logging.getLogger(__name__)

#: Says a text in the message's chat, best effort (it logs its own failure).
Say = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class Arrival:
    """One message the channel judged: what the inbox, the chat's queue and the busy turns need of it."""

    source_id: str  # the platform's id: the inbox takes it once
    conversation_id: str
    payload: InboxPayload  # what the turn runner reads back
    sender: int | str
    owner: bool  # never refused over the bound, and first for a free slot
    text: str  # what it adds to a running turn it joins
    message_id: int | str  # the agent's id of it
    joinable: bool  # it may join the sender's running turn (busy modes)
    queue: Hashable = None  # the chat's queue, when it is not the conversation (Signal, Telegram: the chat)
    fingerprint: str = ""  # what the message is, when the platform may reuse its ids (Inbox.accept)

    @property
    def chat(self) -> Hashable:
        return self.queue if self.queue is not None else self.conversation_id


class ChannelIntake:
    """Takes the judged messages of one channel. ``wait``: while the inbox cannot store, the message is held and
    stored again after a pause (an event stream, not read further meanwhile); without it a message that cannot
    be stored is refused (a webhook: the platform sends it again). ``lost`` logs one a stop ended while held
    (by default: lost, the platform does not deliver it again).
    ``queue_of``: the chat's queue of a conversation id, when it is not the conversation (Signal: the chat).
    ``taken``: told of each stored item as it is handed on (Telegram's albums)."""

    def __init__(
        self,
        turns: ItemTurns,
        queues: ChatQueues,
        tasks: ChatTasks,
        storage: StorageOutage,
        *,
        wait: Callable[[float], Awaitable[None]] | None = None,
        stopping: Callable[[], bool] = lambda: False,
        lost: Callable[[Arrival], None] | None = None,
        queue_of: Callable[[str], Hashable] = lambda conversation_id: conversation_id,
        taken: Callable[[InboxItem], None] = lambda _item: None,
    ) -> None:
        self.turns, self.queues, self.tasks, self.storage = turns, queues, tasks, storage
        self.wait, self.stopping, self.queue_of, self.taken = wait, stopping, queue_of, taken
        self.lost = lost or self._lost
        self.fetched: dict[str, tuple[InboxItem, Arrival]] = {}  # stored by ``store_all``, not yet handed on
        self._unsynced_from: str | None = None  # the first of them not yet fsynced (``first_unsynced``)

    def _lost(self, arrival: Arrival) -> None:
        log.warning(
            "%s: stopped while the message %s from %s waited for the inbox: it is lost (the platform does not "
            "deliver a message again); ask them to send it again",
            self.turns.channel,
            arrival.message_id,
            arrival.sender,
        )

    @property
    def inbox(self) -> Inbox:
        return self.turns.inbox

    async def came_before(self, source_id: str) -> bool:
        """The platform's message ``source_id`` was taken before (stored, or handled at once: ``handled_now``): a
        webhook's delivery again (its sender's retry, or a recorded request replayed) is handled no second time,
        nor is an old "yes" taken for the answer to the question open now."""
        if not await asyncio.to_thread(self.inbox.seen, source_id):
            return False
        self._came_again(source_id)
        return True

    async def handled_now(self, source_id: str, fingerprint: str = "") -> bool:
        """Note a message handled without the inbox (a command, the answer to a question, a button pressed) as
        taken, for ``came_before``: False when it was taken before (a delivery again: handled no second time;
        with ``fingerprint``, what it is, so another one under a reused id is new: Telegram). A disk that cannot
        note it costs the once-check, not the command."""
        try:
            if await asyncio.to_thread(self.inbox.note, source_id, fingerprint):
                return True
        except OSError as err:
            log.warning("%s: could not note %s as taken (%s); handled anyway", self.turns.channel, source_id, err)
            return True
        self._came_again(source_id)
        return False

    def _came_again(self, source_id: str) -> None:
        log.info("%s: %s came again; answered once", self.turns.channel, source_id)

    async def over_limit(self, chat: Hashable, say: Say) -> None:
        """A message beyond its chat's ``runtime.max_pending_per_chat``: not answered, not stored; the chat is told
        once per backlog."""
        if self.queues.refused(chat):
            await say(texts.backlog_text(self.queues.pending(chat)))

    async def message(
        self,
        arrival: Arrival,
        say: Say,
        *,
        command: bool,
        owner_data: bool,
        decline: Callable[[], object],
        held_in_order: bool = False,
    ) -> bool:
        """A judged message typed in a chat: a ``/command`` (``command``) answered (``command``'s ``owner_data``
        and ``decline``), any other taken (``take``)."""
        if command:
            owner = arrival.owner
            await self.command(
                arrival.text, arrival.conversation_id, say, owner=owner, owner_data=owner_data, decline=decline
            )
            return True
        return await self.take(arrival, say, held_in_order=held_in_order)

    async def take(
        self, arrival: Arrival, say: Say, *, held_in_order: bool = False, stored: InboxItem | None = None
    ) -> bool:
        """Take ``arrival`` (``stored``: its item, stored by ``store_all``): True when it is handled (stored and
        queued or joined, a duplicate, over the bound); False when it could not be stored (given up without
        ``wait``, or a stop came while it was held). ``held_in_order``: the chat is told that it is held in its
        queue's order, after what runs there (an event stream that is not read further meanwhile)."""
        channel = self.turns.channel
        if stored is None and self.inbox.seen(arrival.source_id, arrival.fingerprint):
            self._came_again(arrival.source_id)
            return True
        if not arrival.owner and self.queues.full(arrival.chat):
            await self.over_limit(arrival.chat, say)  # not answered: the chat's backlog is long enough
            if stored is not None:  # out of the inbox again (left there, the next start would answer it)
                try:
                    await asyncio.to_thread(self.inbox.complete, stored.item_id)
                except OSError as err:
                    log.warning("%s: could not drop %s from the inbox: %s", channel, stored.item_id, err)
            return True
        tell = say
        if held_in_order:

            async def tell(text: str) -> None:
                async def said() -> None:
                    await say(text)

                self.tasks.spawn(arrival.chat, said(), owner=arrival.owner, exempt=True)

        item = stored or await self._store(arrival, tell)
        if item is False:
            return False
        if item is None:
            self._came_again(arrival.source_id)
            return True
        self.taken(item)
        turns = self.turns
        # Busy modes (conversation/busy.py): stored first, then handed to the sender's running turn.
        if arrival.joinable and turns.busy.join(
            turns.runtime, turns.flags, arrival.conversation_id, arrival.sender, arrival.text, arrival.message_id, item
        ):
            log.info("%s: message %s joined the turn running in %s", channel, arrival.message_id, arrival.chat)
            return True
        # Not full a moment ago, and only this coroutine adds to the queue: admitted (exempt says so).
        self.tasks.spawn(arrival.chat, turns.answer(item), owner=arrival.owner, exempt=True)
        return True

    async def store_all(
        self, arrivals: Sequence[Arrival], say: Callable[[Arrival], Say], *, synced: bool = True
    ) -> int:
        """Store ``arrivals`` (in the platform's order) before the platform is told they came: how many leading ones
        are stored, or were before; the rest, from one a stop ended while it was held, wait for the platform to
        deliver them again. Each stored now waits in ``fetched``, with what was read of it, for ``take``'s
        ``stored``. A burst goes in one batch (``Inbox.accept_many``: the file system commits its fsyncs
        together); one at a time after that (what the batch did not store, or all when it failed), held while the
        inbox cannot store (``_store``; ``say``: each one's chat). ``synced=False``: written, not yet fsynced
        (``Inbox.accept_many``): the platform may be told only what ``first_unsynced`` allows."""
        items = await asyncio.to_thread(self._store_batch, arrivals, synced) if len(arrivals) > 1 else {}
        count = len(arrivals)
        for index, arrival in enumerate(arrivals):
            if arrival.source_id in items or self.inbox.seen(arrival.source_id, arrival.fingerprint):
                continue
            item = await self._store(arrival, say(arrival), synced)
            if item is False:
                count = index
                break
            if item is not None:
                items[arrival.source_id] = item
        stored = [arrival for arrival in arrivals if arrival.source_id in items]
        if stored and not synced and self._unsynced_from is None:
            self._unsynced_from = stored[0].source_id
        self.fetched.update((arrival.source_id, (items[arrival.source_id], arrival)) for arrival in stored)
        return count

    async def first_unsynced(self) -> str | None:
        """The first message ``store_all(synced=False)`` stored that is not on disk yet, ``sync_stored`` tried
        first: the platform is told of none from it on (it delivers them again; the inbox knows them, and their
        turns are not started twice); None once all is."""
        if self._unsynced_from is not None and await self.sync_stored():
            self._unsynced_from = None
        return self._unsynced_from

    async def sync_stored(self) -> bool:
        """What ``store_all(synced=False)`` stored, made durable (``Inbox.sync_accepted``): True when all of it is.
        False when the disk failed: logged as the inbox's outage and, with ``wait``, after its pause (unless
        stopping); the platform is not told of those messages yet (they stay to sync at the next call)."""
        if not self.inbox.unsynced:
            return True
        try:
            await asyncio.to_thread(self.inbox.sync_accepted)
        except OSError as err:
            pause = self.storage.failed(err, "what was written and not yet synced")
            if self.wait is not None and not self.stopping():
                await self.wait(pause)
            return False
        self.storage.ok()
        return True

    def _store_batch(self, arrivals: Sequence[Arrival], synced: bool = True) -> dict[str, InboxItem]:
        """The batch of ``store_all``, by source id; nothing when it failed (disk full, an odd payload)."""
        entries = [(a.source_id, a.conversation_id, a.payload, a.fingerprint) for a in arrivals]
        try:
            stored = self.inbox.accept_many(entries, synced=synced)
        except Exception as err:  # noqa: BLE001 - one by one after it, which finds the one that fails
            level = logging.DEBUG if isinstance(err, OSError) else logging.WARNING
            log.log(level, "%s: batch write failed: %s", self.turns.channel, err)
            return {}
        return {arrival.source_id: item for arrival, item in zip(arrivals, stored, strict=True) if item is not None}

    async def command(
        self,
        text: str,
        conversation_id: str,
        say: Say,
        *,
        owner: bool,
        owner_data: bool,
        decline: Callable[[], object],
        ask_reset: Callable[[], Awaitable[None]] | None = None,
        source: tuple[str, str] | None = None,
    ) -> None:
        """A ``/command`` typed as a message. ``/stop`` at once (it is about the turn the chat's queue waits for):
        the conversation's running turn ends and ``decline`` answers no to its open question; any other in the
        chat's order (conversation/commands.py's ``command_reply``; ``owner_data``: the owner's own one-to-one
        chat, for the owner-only ones), refused beyond the chat's bound. ``owner``: the owner sent it (first
        for a free slot, never refused). ``ask_reset``: a channel with buttons asks /reset's question itself
        (Telegram), in its place in the chat's order; without it the question asks for ``/reset yes``.
        ``source``: the platform's id of it and its fingerprint (``handled_now``), when it may come again: a
        delivery again runs nothing (Telegram's webhook posts an update again when our 200 did not reach it)."""
        if source is not None and not await self.handled_now(*source):
            return
        runtime, chat, word = self.turns.runtime, self.queue_of(conversation_id), texts.command_word(text)
        if word == "stop":
            await say(texts.stop_turn(runtime, conversation_id, decline))
            return

        async def answer() -> None:
            if ask_reset is not None and word == "reset":
                await ask_reset()
                return
            await say(
                await asyncio.to_thread(texts.command_reply, runtime, conversation_id, text, owner_data=owner_data)
            )

        if not self.tasks.spawn(chat, answer(), owner=owner):
            await self.over_limit(chat, say)

    def start_job(self, item: InboxItem) -> None:
        """Answer a job run's item in its chat's queue as the owner's (first, never refused), once while it waits
        or runs (the scheduler offers it again at its next look)."""
        self.tasks.spawn_once(item.item_id, self.queue_of(item.conversation_id), lambda: self.turns.answer(item))

    def replay(
        self, prefix: str, owner: Callable[[InboxItem], bool] = lambda _item: True, *, notices_first: bool = False
    ) -> None:
        """Answer what the last run left in the inbox under ``prefix``, before any new message is taken: its job
        runs (``start_job``), then its messages oldest first in their chats' queues (accepted before, so never
        refused; ``owner``: whether the owner sent one), with ``notices_first`` the notices that wait
        (``ItemTurns.queue_notice``) before them."""
        jobs, messages = left_by_last_run(self.inbox, prefix, self.turns.channel)
        for item in jobs:
            self.start_job(item)
        if notices_first:
            messages = [m for m in messages if is_notice_item(m)] + [m for m in messages if not is_notice_item(m)]
        for item in messages:
            chat = self.queue_of(item.conversation_id)
            self.tasks.spawn(chat, self.turns.answer(item), owner=owner(item), exempt=True)

    async def _store(self, arrival: Arrival, tell: Say, synced: bool = True) -> InboxItem | Literal[False] | None:
        """The message in the inbox (None: a duplicate); False when it could not be stored. While the inbox cannot
        store it, the chat is told once and, with ``wait``, it is tried again with a growing pause."""
        while True:
            try:
                item = await self._accept(arrival, synced)
            except OSError as err:
                held = f"the message {arrival.message_id} from {arrival.sender}"
                pause = self.storage.failed(err, held, refused=self.wait is None)
                if self.storage.tell(arrival.chat):
                    await tell(held_text(err))
                if self.wait is None:
                    return False
                try:
                    if not self.stopping():
                        await self.wait(pause)
                except asyncio.CancelledError:
                    self.lost(arrival)
                    raise
                if self.stopping():
                    self.lost(arrival)
                    return False
                continue
            self.storage.ok()
            return item

    async def _accept(self, arrival: Arrival, synced: bool) -> InboxItem | None:
        """``Inbox.accept``; unsynced (no fsync in it: ``sync_stored`` commits it before the platform is told), in
        the event loop: a hand-off to a thread and back, two wake-ups on the way to the turn, cost more than the
        write (``ItemTurns.make_reply``'s ledger write says the same). Another acceptance's fsync under way
        (``AcceptBusy``): in a thread, as a synced one, so the loop never waits for a disk."""
        entry = (arrival.source_id, arrival.conversation_id, arrival.payload, arrival.fingerprint)
        if not synced:
            try:
                return self.inbox.accept(*entry, synced=False, wait=False)
            except AcceptBusy:
                pass
        return await asyncio.to_thread(functools.partial(self.inbox.accept, synced=synced), *entry)


def left_by_last_run(inbox: Inbox, prefix: str, channel: str) -> tuple[list[InboxItem], list[InboxItem]]:
    """What the last run left in the inbox under ``prefix``, oldest first: its job runs and its messages (those a
    recorded reply answers are left out: busy modes, completed with that reply)."""
    items = inbox.pending(prefix)
    answered = answered_by_recorded(items)
    jobs = [item for item in items if is_job_item(item)]
    messages = [item for item in items if not is_job_item(item) and item.item_id not in answered]
    if messages:
        log.info("%s: answering %d message(s) left unanswered by the last run", channel, len(messages))
    return jobs, messages
