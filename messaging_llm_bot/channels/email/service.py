"""The email channel's bot: looks at the folder every ``email.poll_seconds``, answers, and stops cleanly.

Start-up: a lock file in the workspace (one email bot per workspace), the inbox items a crash left answered
first, reminders and the owner's jobs, collectors' notices, then the looks at the folder. Each look takes the
mail above the cursor (email/cursor.py), judges and stores each one (email/intake.py) and queues its turn
(email/turn.py) in its sender's chat. A server that is away is logged once and tried again at each look.
(IMAP IDLE needs Python 3.14's imaplib; until then the folder is polled.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from assistant_framework.config.settings.email import EmailSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.email.approval import EmailApprovals
from messaging_llm_bot.channels.email.cursor import Cursor
from messaging_llm_bot.channels.email.intake import EmailIntake
from messaging_llm_bot.channels.email.mailitem import PREFIX, MailItem, address_of
from messaging_llm_bot.channels.email.message import MailIn, Thread
from messaging_llm_bot.channels.email.outbox import Outbox
from messaging_llm_bot.channels.email.servers import Mailbox, MailServerError
from messaging_llm_bot.channels.email.turn import EmailTurns
from messaging_llm_bot.conversation.intake import left_by_last_run
from messaging_llm_bot.conversation.job_router import ChannelJobs
from messaging_llm_bot.conversation.notices import notify_from_thread
from messaging_llm_bot.conversation.pairing import Pairing
from messaging_llm_bot.conversation.service import ChannelService

log = logging.getLogger(__name__)

T = TypeVar("T")


def config_problem(settings: EmailSettings) -> str | None:
    """Why the channel cannot start with ``settings`` (one sentence naming the key), or None."""
    if not settings.address.strip():
        return "email.address is not set: the assistant's own address, its replies come from it"
    if not settings.imap.host:
        return "email.imap.host is not set: the server the assistant reads its mail from"
    if not settings.smtp.host:
        return "email.smtp.host is not set: the server the assistant sends its replies through"
    return None


class EmailService(ChannelService):
    """One running email bot: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is thread-safe."""

    NAME, TITLE = "email", "the email channel"
    LOCK_FILE, LOCK_WHO = "state/email.lock", "email: another email bot"

    # The parts made when the channel starts (``serve``).
    _turns: EmailTurns | None = None
    _mailbox: Mailbox | None = None
    _looking: asyncio.Task[None] | None = None
    _down: str | None = None  # the server's failure, logged once per outage

    @property
    def settings(self) -> EmailSettings:
        """The ``email`` settings of the runtime's current records (``/reload`` changes who may write)."""
        return self.runtime.settings.email

    def problem(self) -> str | None:
        problem = config_problem(self.settings)
        return f"email: {problem} (docs/email.md)" if problem else None

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        workspace = self.runtime.workspace
        settings = self.settings
        inbox = await asyncio.to_thread(Inbox, workspace)
        outbox = Outbox(lambda: self.settings)
        approvals = EmailApprovals(outbox)
        self._turns = self.shutdown.turns = turns = EmailTurns(
            self.runtime, inbox, outbox, lambda: self.settings, approvals
        )
        intake = EmailIntake(workspace, inbox, lambda: self.runtime.settings, approvals, self._pairing(outbox))
        self._mailbox = mailbox = Mailbox(settings.imap, settings.folder, settings.max_mail_bytes)
        cursor = await asyncio.to_thread(Cursor, workspace, settings.folder)
        if not settings.allowed:
            log.warning("email.allowed is empty: the assistant answers no one's mail (docs/email.md)")
        if settings.trust == "any":
            log.warning(
                'email.trust is "any": a mail counts as its From address\'s on the From header alone, which '
                'anyone can forge; set it to "auth-results" (docs/email.md)'
            )
        log.info(
            "email: serving %s (%s on %s) for %s",
            settings.address,
            settings.folder,
            settings.imap.host,
            list(settings.allowed),
        )
        self._replay(inbox, turns)
        channel_jobs = ChannelJobs(
            loop,
            inbox,
            owner_conversation=self._job_conversation,
            start=self._start_job(turns),
            send_reminder=self._reminder(turns),
            reminder_poll_seconds=self.reminder_poll_seconds,
        )
        await self.join_jobs(channel_jobs)
        self.runtime.start_background(
            notify=lambda name, text: notify_from_thread(loop, self._to_owner(turns), name, text)
        )
        self._looking = loop.create_task(self._look_until_stopped(mailbox, cursor, intake, turns))

    async def stop_taking(self) -> None:
        # A look in progress runs in a thread that a cancel cannot stop: let it end (it stops between mails)
        # before the connection is closed, so no thread keeps a socket open behind the close.
        if self._looking is not None:
            await asyncio.wait({self._looking}, timeout=self.settings.imap.timeout_seconds)
            self._looking.cancel()
            await asyncio.gather(self._looking, return_exceptions=True)

    async def close(self) -> None:
        if self._mailbox is not None:
            await asyncio.to_thread(self._mailbox.close)

    # -- the folder ---------------------------------------------------------------

    async def _look_until_stopped(
        self, mailbox: Mailbox, cursor: Cursor, intake: EmailIntake, turns: EmailTurns
    ) -> None:
        while not self.stopping:
            try:
                await self._look(mailbox, cursor, intake, turns)
            except MailServerError as err:
                if self._down != str(err):
                    log.warning("email: %s; trying again at the next look", err)
                self._down = str(err)
            except OSError as err:  # the inbox or the cursor cannot be written: the mail stays on the server
                log.warning("email: cannot store mail now (%s); trying again at the next look", err)
            await self.sleep(self.settings.poll_seconds)

    async def _look(self, mailbox: Mailbox, cursor: Cursor, intake: EmailIntake, turns: EmailTurns) -> None:
        position = cursor.position
        batch = await asyncio.to_thread(
            mailbox.poll,
            position.uidvalidity if position else None,
            position.last_uid if position else None,
            position.since() if position else None,
        )
        if self._down is not None:
            log.info("email: %s answers again", mailbox.where)
            self._down = None
        if position is None:
            log.info(
                "email: first look at %s: mail already there (up to UID %d) is left alone; new mail is answered",
                cursor.folder,
                batch.highest,
            )
        elif position.uidvalidity != batch.uidvalidity:
            log.warning(
                "email: %s was rebuilt (UIDVALIDITY %d -> %d): reading its mail since %s again; mail already "
                "taken is known by its Message-ID",
                cursor.folder,
                position.uidvalidity,
                batch.uidvalidity,
                position.since(),
            )
        for fetched in batch.mails:
            if self.stopping:
                return
            item = await intake.take(fetched, batch.uidvalidity)
            await asyncio.to_thread(cursor.advance, batch.uidvalidity, fetched.uid)
            if item is not None and not turns.join_running(item):
                self._queue(item, turns)
        await asyncio.to_thread(cursor.advance, batch.uidvalidity, max(batch.highest, _last(cursor)))

    def _queue(self, item: InboxItem, turns: EmailTurns) -> None:
        mail = MailItem.from_json(item.payload)
        sender = mail.sender if mail is not None else item.conversation_id
        self.tasks.spawn(sender, turns.answer(item), owner=sender == self.settings.owner_address, exempt=True)

    def _pairing(self, outbox: Outbox) -> Callable[[MailIn], Coroutine[Any, Any, None]]:
        """A proven stranger's mail answered, in its thread, with a pairing code (at most once an hour per
        sender, conversation/pairing.py); nothing when pairing is off or a code was given this hour."""
        pairing = Pairing(self.runtime)

        async def answer(mail: MailIn) -> None:
            said = await asyncio.to_thread(pairing.stranger, "email", mail.sender)
            if not said:
                log.info("email: mail from %s, who is not in email.allowed: not answered", mail.sender)
                return
            thread = Thread(mail.message_id, mail.subject, mail.references)
            try:
                await outbox.send(mail.sender, said, key=f"pair:{mail.sender}:{mail.message_id}", thread=thread)
            except MailServerError as err:
                log.warning("email: could not send %s their pairing code: %s", mail.sender, err)
                return
            log.info("email: %s is not in email.allowed; sent them a pairing code", mail.sender)

        return answer

    def _replay(self, inbox: Inbox, turns: EmailTurns) -> None:
        """Answer what the last run left in the inbox, oldest first: job runs, then mail."""
        jobs, mails = left_by_last_run(inbox, PREFIX, "email")
        for item in jobs:
            self._start_job(turns)(item)
        for item in mails:
            self._queue(item, turns)

    # -- the owner's jobs, reminders and notices --------------------------------------

    def _job_conversation(self, job: Job) -> str | None:
        owner = self.settings.owner_address
        return None if owner is None else PREFIX + owner

    def _start_job(self, turns: EmailTurns) -> Callable[[InboxItem], None]:
        """A job run's item answered in the owner's queue, once at a time (conversation/chattasks.py)."""

        def start(item: InboxItem) -> None:
            self.tasks.spawn_once(item.item_id, address_of(item.conversation_id), lambda: turns.answer(item))

        return start

    def _reminder(self, turns: EmailTurns) -> Callable[[object, str, object], Coroutine[Any, Any, bool]]:
        """A due reminder mailed to the address of the chat it was set in (a new mail, subject "Reminder")."""

        async def send(chat_id: object, text: str, conversation: object) -> bool:
            to = address_of(str(chat_id))
            return await turns.send_notice(to, text, subject="Reminder", key=f"reminder:{chat_id}:{text}")

        return send

    def _to_owner(self, turns: EmailTurns) -> Callable[[str], Any]:
        async def send(text: str) -> bool:
            owner = self.settings.owner_address
            if owner is None:
                return False
            return await turns.send_notice(owner, text, subject="A notice from your assistant", key=f"notice:{text}")

        return send


def _last(cursor: Cursor) -> int:
    return cursor.position.last_uid if cursor.position else 0
