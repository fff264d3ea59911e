"""The turns of a chat only the owner reaches, on the bot's own machine (the terminal chat, the web chat): one
conversation, one user, every message the owner's own (their data seen, their model calls first, ``ask`` calls
confirmed in the chat). The flow is ``ItemTurns``' as on every channel: the reply made once in the busy turn,
recorded, delivered through the ledger, the items completed; a job run answered in the same conversation.

The channel gives what differs: what the model reads of a message (``turn_input``: the words, or a file's, or the
sentence that answers instead), how the answer shows while it is written (``on_event``), a file the model sends
(``show_file``), the delivery of a reply (``deliver``) and a word to the owner (``tell``).

``OwnerChatService`` is such a chat's running channel, on ``ChannelService``: the inbox and the turns made, a
question of an ``ask`` call asked in the chat, what the last run left answered first (its messages in the chat's
queue, its job runs and notices beside them), the process's one scheduler joined (every job of the channel runs
in the conversation, a due reminder is shown there), the runtime's background work started with its notices, a
message handed to the running turn by the busy mode or queued, /stop, and the open questions declined at the stop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.media.files_out import FileToSend
from messaging_llm_bot.conversation.approvals import Answer, OpenQuestions
from messaging_llm_bot.conversation.chatqueue import ChatQueues, max_pending
from messaging_llm_bot.conversation.chattasks import ChatTasks
from messaging_llm_bot.conversation.files_out import file_sender
from messaging_llm_bot.conversation.intake import left_by_last_run
from messaging_llm_bot.conversation.item_turns import ItemTurns, is_notice_item
from messaging_llm_bot.conversation.job_router import ChannelJobs
from messaging_llm_bot.conversation.job_runs import is_job_item
from messaging_llm_bot.conversation.reminders import POLL_SECONDS
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.service import ChannelService
from messaging_llm_bot.conversation.shutdown import request_stop
from messaging_llm_bot.conversation.turn import TurnInput, TurnRequest

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from messaging_llm_bot.agent.guard import ApprovalRequest, ApproveCallback
    from messaging_llm_bot.agent.turn import AgentEvent

log = logging.getLogger(__name__)

#: The chat's one user, as the agent's records name them (the agent lets only a turn's sender steer it).
OWNER = "owner"


def joinable(item: InboxItem) -> bool:
    """A message that may join the running turn, or be joined (busy modes): the owner's words, no file, no
    command, no job run."""
    text = str(item.payload.get("text", ""))
    return not is_job_item(item) and not item.payload.get("files") and bool(text) and not text.startswith("/")


class OwnerChatTurns(ItemTurns):
    """The turns of the owner's one conversation ``conversation`` on ``channel``; ``approver`` confirms an ``ask``
    call (None: refused), set by the channel once it can ask."""

    #: The largest file the model may send into the chat (the ``send_file`` skill).
    MAX_FILE_BYTES = 0

    def __init__(self, runtime: Runtime, inbox: Inbox, channel: str, conversation: str) -> None:
        super().__init__(runtime, inbox, channel)
        self.conversation = conversation
        self.approver: ApproveCallback | None = None

    async def answer_message(self, item: InboxItem) -> None:
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []  # offered to this turn but not answered by it
        if reply is None:
            produce = functools.partial(self._produce, item)
            reply, merged, later = await self.make_reply(item, OWNER, joinable(item), produce, after=self.turn_ended)
        if await self.deliver(item, reply):
            await self.finish(item, merged, later)  # else stopping first: all stay in the inbox

    async def _produce(self, item: InboxItem) -> str:
        got = await self.turn_input(item)
        if isinstance(got, str):
            return got
        loop = asyncio.get_running_loop()
        send_file = file_sender(
            self.runtime.workspace,
            item.item_id,
            loop,
            functools.partial(self.show_file, item),
            self.MAX_FILE_BYTES,
        )
        conversation = self.conversation
        request = TurnRequest(
            conversation,
            got.text,
            conversation,
            OWNER,
            item.item_id,
            owner_chat=True,
            from_owner=True,
            untrusted=got.untrusted,
            images=got.images,
            notice=got.notice,
            send_file=send_file,
        )
        return await self.ask_agent(request, approve=self.approver, on_event=self.on_event)

    def job_user(self) -> str:
        return OWNER  # whoever runs the chat (the terminal, the web page signed in to)

    async def answer_job(self, item: InboxItem) -> None:
        await self.run_job(item, functools.partial(self.deliver, item), functools.partial(self.tell, item))

    def channel_jobs(
        self,
        loop: asyncio.AbstractEventLoop,
        start: Callable[[InboxItem], None],
        show: Callable[[str], Awaitable[bool]],
        reminder_poll_seconds: float = POLL_SECONDS,
    ) -> ChannelJobs:
        """What the chat gives the process's one scheduler (conversation/job_router.py): every job of the channel
        runs in its one conversation (``start`` answers a run's item on ``loop``), a due reminder is shown there
        (``show``: False when it could not be, then it stays due), a served client's ``ask`` is confirmed in the
        chat (``approver``; None: refused)."""

        async def remind(chat_id: object, text: str, conversation: object) -> bool:
            return await show(text)

        return ChannelJobs(
            loop,
            self.inbox,
            owner_conversation=lambda job: self.conversation,
            start=start,
            send_reminder=remind,
            reminder_poll_seconds=reminder_poll_seconds,
            ask_owner=self.approver,
        )

    # -- what the channel gives -------------------------------------------------------------------------------

    async def turn_input(self, item: InboxItem) -> TurnInput | str:
        """What the model reads of a stored message, or the sentence that answers it instead: its words."""
        return TurnInput(str(item.payload.get("text", "")))

    def on_event(self, event: AgentEvent) -> None:
        """The turn's progress (from its worker thread): nothing shown unless the channel shows it."""

    async def turn_ended(self) -> None:
        """After a new turn ended, whatever happened (before its reply is delivered)."""

    async def show_file(self, item: InboxItem, one: FileToSend) -> str:
        """A file the model sends while answering ``item``, into the chat; the chat's id of it."""
        raise NotImplementedError

    async def deliver(self, item: InboxItem, reply: str) -> bool:
        """The one delivery of replies, job runs' and notices': each part once (the ledger); False when the chat
        ended first (the item stays in the inbox)."""
        raise NotImplementedError

    async def tell(self, item: InboxItem, text: str) -> None:
        """A word to the owner about ``item`` (a job paused), best effort."""
        raise NotImplementedError


class OwnerChatService(ChannelService):
    """The running channel of the owner's one conversation ``CONVERSATION`` (its inbox items under ``PREFIX``).
    Job runs and notices are answered beside the typed turns, one at a time, each once (``side``)."""

    CONVERSATION = ""
    PREFIX = ""  # what the inbox's ids of the chat's items begin with
    WHERE = ""  # where a question is asked, as the log says it ("the terminal")

    turns: OwnerChatTurns
    inbox: Inbox

    def __init__(
        self, runtime: Runtime, *, stop_signals: Sequence[int] | None = None, manage_runtime: bool = True
    ) -> None:
        super().__init__(runtime, stop_signals=stop_signals, manage_runtime=manage_runtime)
        self.side = ChatTasks(ChatQueues(self.NAME, lambda: 1, lambda: max_pending(runtime.settings)), self.NAME)
        self.questions = OpenQuestions()  # an ``ask`` call's question, open until answered in the chat

    def make_turns(self) -> OwnerChatTurns:
        """The chat's turns, made once the inbox is."""
        raise NotImplementedError

    def runs_jobs(self) -> bool:
        """Whether the chat takes job runs, reminders, notices and questions (a person is there to read them)."""
        return True

    async def ask_owner(self, request: ApprovalRequest) -> Answer:
        """Ask the owner in the chat whether an ``ask`` call may run."""
        raise NotImplementedError

    def answer_left(self, item: InboxItem) -> None:
        """A message the last run left unanswered, answered before any new one."""
        self.tasks.spawn(self.CONVERSATION, self.turns.answer(item), owner=True, exempt=True)

    async def serve(self) -> None:
        self.inbox = await asyncio.to_thread(Inbox, self.runtime.workspace)
        self.turns = self.shutdown.turns = self.make_turns()
        loop = asyncio.get_running_loop()
        if self.runs_jobs():  # else an ``ask`` call is refused: no one is there to confirm it
            self.turns.approver = self.questions.approver(self.ask_owner, loop, self.WHERE)
        jobs, messages = left_by_last_run(self.inbox, self.PREFIX, self.NAME)
        for item in (one for one in messages if not is_notice_item(one)):
            self.answer_left(item)
        if not self.runs_jobs():
            return
        for item in [*jobs, *(one for one in messages if is_notice_item(one))]:
            self.start_job(item)
        await self.join_jobs(self.turns.channel_jobs(loop, self.start_job, self.tell, self.reminder_poll_seconds))
        self.runtime.start_background(notify=self.notify_from_thread)

    def start_job(self, item: InboxItem) -> None:
        """Answer a run's (or a notice's) item beside the typed turns: one at a time, in the order offered, each
        once (the scheduler offers a run again at its next look)."""
        self.side.spawn_once(item.item_id, self.CONVERSATION, lambda: self.turns.answer(item))

    def hand_on(self, item: InboxItem) -> None:
        """A stored message (on the loop): handed to the running turn by the busy mode, else its own turn in the
        chat's order."""
        turns = self.turns
        text = str(item.payload.get("text", ""))
        if joinable(item) and turns.busy.join(
            self.runtime, turns.flags, self.CONVERSATION, OWNER, text, item.item_id, item
        ):
            log.info("%s: message %s joined the turn running in %s", self.NAME, item.item_id, self.CONVERSATION)
            return
        self.tasks.spawn(self.CONVERSATION, turns.answer(item), owner=True, exempt=True)

    async def tell(self, text: str) -> bool:
        """A reminder's Markdown shown in the chat; False when it could not be (it stays due)."""
        raise NotImplementedError

    def stop_turn(self) -> bool:
        """Stop the answer being written (any thread): its open question is declined; False when none ran."""
        stopped = self.runtime.agent.stop(self.CONVERSATION)
        request_stop(self._loop, self.decline)
        return stopped

    def decline(self) -> None:
        """Every open question answered no (on the loop)."""
        self.questions.decline_all(self.CONVERSATION)

    async def stop_taking(self) -> None:
        self.decline()

    async def close(self) -> None:
        await self.side.cancel_waiting()
