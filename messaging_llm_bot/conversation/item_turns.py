"""A channel's turns that answer one durable inbox item each: the same flow on every channel that owns its
loop (Signal, Matrix, WhatsApp, email; docs/channels.md, "The life of a message").

An item is a job run (answered once through ``conversation/job_answer.py``) or a chat's message. A message's
reply is made once, inside the busy turn later messages of the same person may join, with a sentence instead
of silence when the turn fails; it is recorded in the inbox with the items it answers before anything is
sent; then delivered, each part recorded in the ledger as it goes out, and retried with backoff while the
platform cannot take it; only then are the item and the ones it answers completed, and the messages offered
to the turn too late answered each in its own turn after it. A replay (a reply recorded by the last run)
skips straight to the delivery. The channel gives what differs: reading its item, the turn itself, the send.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable

from assistant_framework.background import FOREGROUND
from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.conversation.busy import RunningTurn
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.delivery import DeliveryError
from messaging_llm_bot.conversation.handed import Handed, handing
from messaging_llm_bot.conversation.job_answer import Deliver, Tell, answer_job_run
from messaging_llm_bot.conversation.job_runs import is_job_item
from messaging_llm_bot.conversation.reminders import DeliveryRefused
from messaging_llm_bot.conversation.routes import configured_owner, is_owner_conversation
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import FAILED_REPLY, ChannelTurns

log = logging.getLogger(__name__)

RETRY_MAX_SECONDS = 30.0
#: The payload's key of a notice the bot sends on its own through the inbox (``ItemTurns.queue_notice``).
NOTICE_KEY = "notice"


def is_notice_item(item: InboxItem) -> bool:
    """An item that is a notice to send (its reply recorded when it was made), not a message to answer."""
    return NOTICE_KEY in item.payload


class SendLater(Exception):
    """A send that may work later (no connection, the platform overloaded or rate limiting): the delivery
    waits and tries again. ``logged`` when the channel already said so its own way; ``after``: the least
    wait the platform asked for (seconds)."""

    def __init__(self, reason: object, *, logged: bool = False, after: float = 0.0) -> None:
        super().__init__(str(reason))
        self.logged = logged
        self.after = after


#: One try at sending a reply (the parts the ledger does not have yet): True when it is out, False to leave
#: the item in the inbox (held for later); raises ``SendLater`` to be tried again after a wait and
#: ``DeliveryError`` when the platform refused it (given up).
Attempt = Callable[[], Awaitable[bool]]


class ItemTurns(ChannelTurns):
    """The turn runner of a channel that answers its inbox items itself: ``answer`` is its one entry."""

    #: The reply when the workspace cannot be written (``reason``: the system's words).
    WORKSPACE_FAILED = "⚠️ I could not handle your message: my workspace cannot be written ({reason})."
    #: Read the item again before answering it: it may have been answered meanwhile (a job run handed over
    #: again, a held reply released twice).
    REREAD = False
    #: The longest wait between two tries of a delivery (seconds), and the first.
    RETRY_MAX_SECONDS = RETRY_MAX_SECONDS
    RETRY_FIRST_SECONDS = 0.5
    #: The tries of a delivery after which the log says, once, that its reply is held (``log_held``); a platform
    #: whose sends retry on their own gives fewer.
    TRIES_BEFORE_HELD = 4
    #: The platform's name as a sentence says it ("Telegram refused it: ..."); "": the channel's.
    PLATFORM = ""

    def __init__(self, runtime: Runtime, inbox: Inbox, channel: str) -> None:
        super().__init__(runtime, inbox, channel)
        #: The turns still keeping their exchange after their answer was handed on, by item (``finish`` waits).
        self._keeping: dict[str, asyncio.Future[bool]] = {}
        #: Those whose writes wait for the reply's first part to be out (``part_out``; ``finish`` at the latest).
        self._sending: dict[str, Handed] = {}

    def part_out(self, item_id: str) -> None:
        """A part of the item's reply is out: a turn writing its exchange may take the interpreter now."""
        handed = self._sending.pop(item_id, None)
        if handed is not None:
            handed.sending()

    async def answer(self, item: InboxItem) -> None:
        """Answer ``item`` and complete it; while stopping it is left in the inbox for the next start."""
        if self.stopping:
            log.info("%s: stopping; %s stays in the inbox for the next start", self.channel, item.item_id)
            return
        if self.REREAD:
            current = self.inbox.get(item.item_id)
            if current is None:
                return
            item = current  # with the reply and the parts recorded since it was read
        # Foreground until the reply is out: the trace, the index and the like wait for it.
        with self._active.tracking(), FOREGROUND.active():
            if is_job_item(item):
                await self.answer_job(item)
            else:
                await self.answer_message(item)

    async def answer_message(self, item: InboxItem) -> None:
        """Answer a chat's message (the channel's own flow, mostly ``make_reply``, its delivery, ``finish``)."""
        raise NotImplementedError

    async def answer_job(self, item: InboxItem) -> None:
        """Answer a job run's item (mostly ``run_job`` with the channel's delivery)."""
        raise NotImplementedError

    def said(self, item: InboxItem) -> str:
        """The start of what ``item``'s message said, as the log names it; "" when it is no message."""
        return ""

    def log_held(self, item: InboxItem, err: SendLater) -> None:
        """A reply the platform kept refusing after ``TRIES_BEFORE_HELD`` tries, named with its message."""
        said = self.said(item)
        log.error(
            "%s: the reply of %s%s was not delivered: %s; it stays in the inbox, is tried again every %d s and "
            "resent at the next start",
            self.channel,
            item.item_id,
            f" ({said!r})" if said else "",
            err,
            self.RETRY_MAX_SECONDS,
        )

    async def unreadable(self, item: InboxItem) -> None:
        """An item that holds no message of this channel (a foreign file): completed, never retried."""
        log.error("%s: inbox item %s holds no message of this channel; completing it", self.channel, item.item_id)
        await asyncio.to_thread(self.inbox.complete, item.item_id)

    async def make_reply(
        self,
        item: InboxItem,
        sender: int | str | None,
        joinable: bool,
        produce: Callable[[], Awaitable[str]],
        *,
        after: Callable[[], Awaitable[None]] | None = None,
    ) -> tuple[str, list[str], list[InboxItem]]:
        """A new turn's reply (``produce`` runs it in the busy turn later messages may join; ``after`` runs
        once it ended, whatever happened), recorded in the inbox with the ids of the items it answers too.
        Returns the reply, those ids, and the items offered too late: each answered in its own turn after."""
        running: RunningTurn[InboxItem] | None = None
        failed = True
        handed = Handed(functools.partial(self.inbox.record_kept, item.item_id))
        try:
            with self.busy.turn(item.conversation_id, sender, joinable) as running, handing(handed):
                reply = await produce()
            failed = False
        except asyncio.CancelledError:
            raise
        except OSError as exc:
            log.exception("%s: answering %s failed", self.channel, item.item_id)
            reply = self.WORKSPACE_FAILED.format(reason=exc.strerror)
        except Exception:  # noqa: BLE001 - last line of defence: say so instead of going silent
            log.exception("%s: answering %s failed", self.channel, item.item_id)
            reply = FAILED_REPLY
        finally:
            if after is not None:
                await after()
        joined, later = running.outcome(failed) if running is not None else ([], [])
        merged = [one.item_id for one in joined]  # a failed turn answers none of the messages that joined it
        try:
            # One write: the reply and the later messages it answers (a replay completes them with it). In the
            # event loop: the ledger is written without fsync (inbox/ledger.py) and its lock is never held across
            # one, so this costs less than a hand-off to a thread and back, on the way to the reply's send.
            self.inbox.record_reply(item.item_id, reply, merged, None if failed else handed.keeping)
        except OSError as err:
            log.warning("%s: could not record the reply of %s: %s", self.channel, item.item_id, err)
        if handed.kept is not None:  # still writing the exchange: the item is completed once it is kept
            self._keeping[item.item_id] = handed.kept
            self._sending[item.item_id] = handed  # its writes go on once the reply's first part is out
        return reply, merged, later

    async def finish(
        self, item: InboxItem, merged: list[str], later: list[InboxItem], *, beside_next: bool = False
    ) -> None:
        """After the reply was delivered: complete the item and those it answers, then answer the messages
        offered too late, each in its own turn, in order. ``beside_next`` (every part of the reply is in the
        ledger): the completion runs beside the chat's next turn instead of before it; a crash before it
        ends leaves a reply whose parts are all out, which the next start completes sending nothing."""
        ids = [*merged, item.item_id]
        self.part_out(item.item_id)  # a reply that went out without a recorded part (the web chat's)
        turn = self._keeping.pop(item.item_id, None)
        if beside_next:
            # A running turn from now on (the shutdown waits for it), which keeps a reference too.
            self._active.track(asyncio.get_running_loop().create_task(self._complete_beside(ids, item, turn)))
        else:
            await self._complete(ids, item, turn)
        for other in later:
            await self.answer_message(other)

    async def _complete(self, ids: list[str], item: InboxItem, turn: asyncio.Future[bool] | None) -> None:
        """Complete the items once the turn's exchange is kept (conversation/handed.py); else they stay, and the
        next start keeps it from the ledger's record and completes them, sending nothing."""
        if not await self._kept(item, turn):
            return
        for one in ids:  # two unlinks each, in the event loop (``record_reply`` says why)
            self.inbox.complete(one)

    async def _kept(self, item: InboxItem, turn: asyncio.Future[bool] | None) -> bool:
        if turn is not None:  # this run's turn, writing after its answer was handed on: whether it made them
            return await turn
        if item.keeping is None or item.kept:
            return True
        # A replay: the last run's turn was cut off after its answer was sent, before its exchange was kept.
        return await asyncio.to_thread(self._keep_recorded, item)

    def _keep_recorded(self, item: InboxItem) -> bool:
        from messaging_llm_bot.agent.keeping import KeptTurn  # on use: start-up does not need the agent

        kept = KeptTurn.from_json(item.keeping)
        if kept is None:
            log.warning("%s: the record of %s's exchange is not readable; completing it", self.channel, item.item_id)
            return True
        try:
            self.runtime.agent.keeper.keep(kept, again=True)
            self.inbox.record_kept(item.item_id)
        except Exception:  # noqa: BLE001 - a full disk: the item stays for the next start
            log.exception("%s: could not keep the exchange of %s", self.channel, item.item_id)
            return False
        log.info("%s: kept the exchange of %s, whose turn was cut off after its reply", self.channel, item.item_id)
        return True

    async def _complete_beside(self, ids: list[str], item: InboxItem, turn: asyncio.Future[bool] | None) -> None:
        """``_complete`` as a task of its own."""
        try:
            await self._complete(ids, item, turn)
        except OSError as err:  # left for the next start, which sends nothing again
            log.warning("%s: could not complete %s in the inbox: %s", self.channel, ids[-1], err)

    async def queue_notice(self, tasks: ChatTasks, chat: str, text: str) -> bool:
        """A notice the bot sends on its own (a collector's, the digest) through the inbox and the ledger like a
        reply: it goes out once, or waits there (a channel that holds it, a restart); False when not stored.
        The channel's ``answer_message`` delivers an item ``is_notice_item`` says is one."""
        item = await asyncio.to_thread(self.inbox.accept, f"{NOTICE_KEY}:{uuid.uuid4().hex}", chat, {NOTICE_KEY: True})
        if item is None:
            return False
        await asyncio.to_thread(self.inbox.record_reply, item.item_id, text)
        stored = self.inbox.get(item.item_id) or item
        tasks.spawn(chat, self.answer(stored), owner=True, exempt=True)
        return True

    def job_user(self) -> int | str | None:
        """Whose turn a job run is: the channel's owner as the config names it now; None: it names none."""
        return configured_owner(self.runtime.settings, self.channel)

    async def run_job(self, item: InboxItem, deliver: Deliver, tell: Tell, chat_id: int | str | None = None) -> None:
        """A job run's item answered once (conversation/job_answer.py) in its chat (``chat_id`` as the agent's
        records name it; None: the conversation's id): ``deliver`` its reply, ``tell`` the owner a paused job.
        A job is the owner's turn in the owner's chat, no one else's: dropped when the channel has no owner now
        (the allowlist emptied since it was queued), or its chat is not the chat of the owner the config names
        now (a ``/reload`` or a restart named another owner: the old owner's chat would get the new one's data)."""
        user = self.job_user()
        owners = is_owner_conversation(self.runtime.settings, self.runtime.workspace)
        if user is None or not owners(item.conversation_id):
            why = "no owner chat" if user is None else "its chat is not the chat of the owner the config names now"
            log.warning("jobs: %s cannot run (%s); dropped", item.item_id, why)
            await asyncio.to_thread(self.inbox.complete, item.item_id)
            return
        await answer_job_run(
            self.runtime,
            self.pool,
            self.inbox,
            item,
            chat_id=item.conversation_id if chat_id is None else chat_id,
            user_id=user,
            deliver=deliver,
            tell=tell,
        )

    async def deliver_until(self, item: InboxItem, to: object, attempt: Attempt) -> bool:
        """The one delivery loop of chat turns, job runs and notices: ``attempt`` until the reply is out (True),
        given up after the platform refused it (True: sending again cannot help; a job run's refusal is raised
        as ``DeliveryRefused``, so the run is recorded failed with the platform's reason), or held (False); while
        it cannot be sent it is tried again with backoff, said once in the log, and once more with its message
        after ``TRIES_BEFORE_HELD`` tries, from then on every ``RETRY_MAX_SECONDS``. False when stopping first:
        the item stays in the inbox, its reply recorded, sent at the next start."""
        delay = self.RETRY_FIRST_SECONDS
        told = False
        tries = 0
        while True:
            try:
                return await attempt()
            except DeliveryError as err:
                log.error("%s: the reply of %s to %s was refused: %s; giving up", self.channel, item.item_id, to, err)
                if is_job_item(item):
                    raise DeliveryRefused(f"{self.PLATFORM or self.channel} refused it: {err}") from None
                return True
            except SendLater as err:
                tries += 1
                if tries == self.TRIES_BEFORE_HELD:
                    self.log_held(item, err)
                    told = True
                    delay = self.RETRY_MAX_SECONDS  # the platform keeps refusing: no need to ask it often
                elif not (told or err.logged):
                    told = True
                    log.warning(
                        "%s: the reply of %s cannot be sent for now: %s; retrying", self.channel, item.item_id, err
                    )
                wait = max(delay, err.after)
            if self.stopping:
                return False
            try:
                # asyncio's wait_for may lose a cancel that comes with the stop's wake-up (conversation/waits.py):
                # harmless here, the turn returns False at once as the cancel would have ended it.
                await asyncio.wait_for(self.stop_event.wait(), wait)
                return False
            except TimeoutError:
                delay = min(delay * 2, self.RETRY_MAX_SECONDS)
