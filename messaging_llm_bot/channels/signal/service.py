"""The Signal bot: starts its parts, reads the signal-cli event stream until stopped, and stops cleanly.

Start-up: a lock file in the workspace (one Signal bot per workspace), replay of inbox items a
crash left unanswered, reminders, scheduled jobs and the morning digest on an asyncio job queue,
collectors in the background, then the event stream. The parts, one concept each: incoming events
read, gated and stored, and commands answered (events), one turn (turn), what goes out (send: replies, notices,
approvals' questions), the chats' queues (tasks).
"""

from __future__ import annotations

import asyncio
import logging

from assistant_framework.config.settings import SignalSettings
from assistant_framework.config.settings.chat import signal_id
from assistant_framework.inbox import Inbox
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.events import EventReader
from messaging_llm_bot.channels.signal.identity import Identities
from messaging_llm_bot.channels.signal.send import approvals
from messaging_llm_bot.channels.signal.settings import PREFIX
from messaging_llm_bot.channels.signal.turn import SignalTurns
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.notices import ChannelNotices
from messaging_llm_bot.conversation.outage import Outage
from messaging_llm_bot.conversation.service import ChannelService
from messaging_llm_bot.conversation.strangers import Strangers

log = logging.getLogger(__name__)

REFUSED_LOG = "state/signal/refused.log"  # the strangers told their id (once: kept across restarts)


class SignalService(ChannelService):
    """One running Signal bot: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is thread-safe."""

    NAME, TITLE = "signal", "the Signal frontend"
    LOCK_FILE, LOCK_WHO = "state/signal.lock", "signal: another Signal bot"

    # The parts made when the service starts (``serve``); the event handlers run only after that.
    client: SignalClient
    inbox: Inbox
    turns: SignalTurns
    notices: ChannelNotices
    outage: Outage  # the signal-cli daemon cannot be reached: said once, by the event stream or a send
    identities: Identities
    approvals: ReplyApprovals
    strangers: Strangers
    account_uuid: str | None = None  # the account's own UUID: a mention or quote by UUID only is the bot
    _uuid_asked = False  # signal-cli answered the question (with a UUID or without)
    _consumer: asyncio.Task[None] | None = None

    def job_conversation(self, job: Job) -> str | None:
        """The conversation a Signal job's runs go to (conversation/job_router.py decides which jobs are
        Signal's): the owner's direct chat, never another chat whatever the row says."""
        owner = self.settings.owner_id
        return None if owner is None else PREFIX + owner

    @property
    def settings(self) -> SignalSettings:
        """The ``signal`` record of the runtime's current records: a ``/reload`` (from this chat or another
        frontend) changes the allowlist, the owner, the group mode and typing at once; the keys that need a
        restart keep their running value there (assistant_framework/config/reloadable.py)."""
        return self.runtime.settings.signal

    def problem(self) -> str | None:
        if not self.settings.account:
            return "signal: no account: set signal.account to the bot's number (E.164, e.g. +4915112345678)"
        return None

    async def serve(self) -> None:
        workspace = self.runtime.workspace
        self.outage = Outage("signal", f"the signal-cli daemon at {self.settings.base_url}", log)
        self.client = client = SignalClient(self.settings.base_url, self.settings.account)
        self.inbox = inbox = await asyncio.to_thread(Inbox, workspace)
        self.identities = await asyncio.to_thread(Identities, workspace)
        self.approvals = approvals(client)
        self.turns = self.shutdown.turns = SignalTurns(
            self.runtime, inbox, client, lambda: self.settings, self.outage, self.identities, self.approvals
        )
        await self.learn_account_uuid()
        self.strangers = Strangers.told_once(self.runtime, "signal", REFUSED_LOG)
        await self.strangers.load()
        loop = asyncio.get_running_loop()
        self.notices = notices = self.owner_notices(self.turns.send_to, lambda: self.settings.owner_id)
        events = EventReader(self)
        how = "Send it a message to see your Signal id, then add it with"
        self.warn_if_no_one_allowed(self.settings.allowed, "signal.allowed", how, '["+NUMBER"]')
        log.info(
            "signal: serving %s through signal-cli at %s for %s",
            self.settings.account,
            self.settings.base_url,
            list(self.settings.allowed_ids),
        )
        events.intake.replay(PREFIX, self.turns.sent_by_owner)  # job runs, then messages oldest first (never refused)
        await self.join_jobs_sending(
            notices,
            inbox,
            owner_conversation=self.job_conversation,
            start=events.intake.start_job,
            morning_digest=self.settings.morning_digest,
            ask_owner=self.approvals.owner_approver(lambda: self.settings.owner_id, loop),
        )
        self._consumer = loop.create_task(events.consume())

    async def learn_account_uuid(self) -> None:
        """The account's own UUID from signal-cli (getUserStatus for its number): asked at start and, while the
        daemon cannot be reached, again before the next event; unknown (a mention by number still counts) when
        signal-cli cannot say."""
        if self._uuid_asked:
            return
        try:
            uuid = await self.client.own_uuid()
        except SignalUnavailable as err:
            self.outage.failed(err)  # logged once per outage, with the event stream's
            return
        except SignalRpcError as err:
            log.warning("signal: signal-cli did not give the account's UUID (%s)", err)
            uuid = None
        self._uuid_asked = True
        if uuid is None:
            log.warning("signal: the account's UUID is unknown: a mention or quote by UUID only is not seen")
        self.account_uuid = self.turns.account_uuid = signal_id(uuid) if uuid else None

    async def stop_taking(self) -> None:
        if self._consumer is not None:
            self._consumer.cancel()
            await asyncio.gather(self._consumer, return_exceptions=True)

    async def close(self) -> None:
        if hasattr(self, "client"):  # made at the start
            await self.client.close()
