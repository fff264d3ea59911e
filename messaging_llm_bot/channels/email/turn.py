"""Answer one durable inbox item of the email channel: the turn, then the reply mail through the ledger.

Used for live mail, for the start-up replay and for job runs. The reply is recorded in the inbox before it
is sent, and the sent mail recorded as the item's one part: a crash before the send makes the next start
send the recorded reply (no second model call), a crash after it completes the item without a second mail
(only a kill between the server's acceptance and the record can repeat it, with the same Message-ID). A
server that is down is retried with backoff until the bot stops; a refused recipient is given up.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING

from assistant_framework.config.settings.email import EmailSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.media.files_out import FileToSend
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.contract import DeliveryError, OutgoingFile
from messaging_llm_bot.channels.email.approval import EmailApprovals
from messaging_llm_bot.channels.email.format import CAPABILITIES
from messaging_llm_bot.channels.email.mailitem import MailItem, address_of
from messaging_llm_bot.channels.email.message import NEW_THREAD, Thread
from messaging_llm_bot.channels.email.outbox import Outbox
from messaging_llm_bot.channels.email.servers import MailServerError
from messaging_llm_bot.conversation.files_out import file_sender
from messaging_llm_bot.conversation.images import FilesInput
from messaging_llm_bot.conversation.images import files_input as input_of_files
from messaging_llm_bot.conversation.item_turns import ItemTurns, SendLater
from messaging_llm_bot.conversation.job_runs import JobRun
from messaging_llm_bot.conversation.reminders import DeliveryRefused
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import TurnRequest

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from assistant_framework.memory.service import MemoryService
    from messaging_llm_bot.agent.images import ImageInput

log = logging.getLogger(__name__)

JOB_SUBJECT = "From your assistant: {job}"


class EmailTurns(ItemTurns):
    """Runs the email channel's turns; one per service (the shared steps: conversation/turn.py, item_turns.py)."""

    WORKSPACE_FAILED = "I could not handle your mail: my workspace cannot be written ({reason})."
    RETRY_FIRST_SECONDS, RETRY_MAX_SECONDS = 1.0, 60.0

    def __init__(
        self,
        runtime: Runtime,
        inbox: Inbox,
        outbox: Outbox,
        settings: Callable[[], EmailSettings],
        approvals: EmailApprovals,
    ) -> None:
        super().__init__(runtime, inbox, "email")
        self.outbox, self.approvals = outbox, approvals
        self._settings = settings

    async def answer_message(self, item: InboxItem) -> None:
        mail = MailItem.from_json(item.payload)
        if mail is None:  # not this channel's item
            return await self.unreadable(item)
        reply, merged = item.reply, list(item.merged)  # a replay's merged (busy modes): from the ledger
        later: list[InboxItem] = []
        if reply is None:
            produce = functools.partial(self._produce, item, mail)
            reply, merged, later = await self.make_reply(item, mail.sender, joinable(mail), produce)
        if await self.deliver(item, mail.sender, reply, thread=mail.thread):
            await self.finish(item, merged, later)  # else stopping with the reply unsent: all stay in the inbox

    def join_running(self, item: InboxItem) -> bool:
        """Hand a stored mail to the turn running in its thread (busy modes, conversation/busy.py): a second
        mail of the same sender in the same thread while the first is answered; False when it waits its turn."""
        mail = MailItem.from_json(item.payload)
        if mail is None or not joinable(mail):
            return False
        message_id = mail.message_id or item.item_id
        if not self.busy.join(self.runtime, self.flags, item.conversation_id, mail.sender, mail.text, message_id, item):
            return False
        log.info("email: mail %s joined the turn running in %s", message_id, item.conversation_id)
        return True

    async def _produce(self, item: InboxItem, mail: MailItem) -> str:
        settings = self._settings()
        owner_chat = mail.sender == settings.owner_address
        text = f"(mail, subject: {mail.subject})\n\n{mail.text}" if mail.subject else mail.text
        untrusted, notice = False, ""
        images: tuple[ImageInput, ...] = ()
        if mail.files:  # saved at intake; the mail's words are the first file's caption (email/intake.py)

            async def read(area: Workspace, today: date, index: MemoryService | None) -> FilesInput | str:
                return await input_of_files(area, list(mail.files), self.runtime.settings, index=index)

            got, notice = await self.files(
                item.conversation_id, owner_chat, self.runtime.settings.runtime.timezone, read
            )
            if isinstance(got, str):
                return got
            text, untrusted, images = got.text, True, got.images
        loop = asyncio.get_running_loop()
        approve = self.approvals.approver(item.conversation_id, mail.sender, mail.thread, loop) if owner_chat else None
        send_file = file_sender(
            self.runtime.workspace,
            item.item_id,
            loop,
            lambda one: self._send_file(item, mail, one),
            CAPABILITIES.max_file_bytes,
        )
        request = TurnRequest(
            item.conversation_id,
            text,
            chat_id=item.conversation_id,
            user_id=mail.sender,
            message_id=mail.message_id or item.item_id,
            # Only the owner's proven mail sees the owner's notes, facts and other chats' logs.
            owner_chat=owner_chat,
            from_owner=owner_chat,
            untrusted=untrusted,
            images=images,
            notice=notice,
            send_file=send_file,
        )
        return await self.ask_agent(request, approve=approve)

    async def _send_file(self, item: InboxItem, mail: MailItem, one: FileToSend) -> str:
        """The ``send_file`` skill's file as a mail in the thread with the file attached; its Message-ID (the
        file's key: sent again after a crash it keeps the id)."""
        file = OutgoingFile("photo" if one.photo else "file", one.path, one.caption)
        text = one.caption or one.path.name
        return await self.outbox.send(
            mail.sender, text, key=f"file:{item.item_id}:{one.rel}", thread=mail.thread, files=(file,)
        )

    async def answer_job(self, item: InboxItem) -> None:
        to = address_of(item.conversation_id)
        run = JobRun.of(item)
        subject = JOB_SUBJECT.format(job=run.job_id if run is not None else "a scheduled job")

        async def tell(text: str) -> None:
            try:
                await self.outbox.send(to, text, key=f"tell:{item.item_id}", subject=subject)
            except MailServerError as err:
                log.warning("jobs: could not tell the owner about %s: %s", item.item_id, err)

        await self.run_job(item, lambda text: self.deliver(item, to, text, subject=subject), tell)

    async def deliver(
        self, item: InboxItem, to: str, reply: str, *, thread: Thread = NEW_THREAD, subject: str = ""
    ) -> bool:
        """The one delivery path of mail turns and job runs: the reply mail, sent once (the ledger's part 0),
        retried while the server is away. False when stopping first (the item stays in the inbox); a refused
        recipient is logged and given up (True: sending again cannot help)."""

        async def attempt() -> bool:
            if self.inbox.parts_sent(item.item_id) >= 1:
                return True
            try:
                await self.outbox.send(to, reply, key=item.item_id, thread=thread, subject=subject)
            except MailServerError as err:
                if err.for_good:
                    raise DeliveryError(str(err), for_good=True) from err
                raise SendLater(err) from err
            try:
                await asyncio.to_thread(self.inbox.record_part, item.item_id, 0, 1)
            except (OSError, KeyError) as err:  # the mail is out; a crash before completion could only resend it
                log.warning("email: could not record the sent reply of %s: %s", item.item_id, err)
            return True

        return await self.deliver_until(item, to, attempt)

    async def send_notice(self, to: str, text: str, *, subject: str, key: str) -> bool:
        """A mail the bot sends on its own (a reminder, a notice): True when the server took it; DeliveryRefused
        when the recipient was refused for good."""
        try:
            await self.outbox.send(to, text, key=key, subject=subject)
            return True
        except MailServerError as err:
            if err.for_good:
                raise DeliveryRefused(str(err)) from err
            log.info("email: %s to %s cannot be sent for now: %s", subject, to, err)
            return False


def joinable(mail: MailItem) -> bool:
    """A mail that may join the turn running in its thread, or start one that may be joined (busy modes): words
    of the sender's own, without files (a mail with files is outside content, its own turn)."""
    return not mail.files and bool(mail.text.strip())
