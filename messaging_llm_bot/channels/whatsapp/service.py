"""The WhatsApp channel running: the webhook listening, what a crash left answered, the job scheduler joined
(job runs, reminders, the morning digest), collectors' notices; a stop gives running turns
``shutdown_timeout_seconds``.

Start-up refuses, with one sentence and exit code 2, a config that cannot run (the token's or the app secret's
variable unset, no verify token); with exit code 1 a workspace where another WhatsApp bot runs (a lock file)
or an address the webhook cannot listen on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
from collections.abc import Sequence

from assistant_framework.config.settings import WhatsAppSettings
from assistant_framework.inbox import Inbox
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.contract import Address, TextOut
from messaging_llm_bot.channels.whatsapp.channel import OutsideWindow, WhatsAppChannel
from messaging_llm_bot.channels.whatsapp.graph import GraphClient, GraphUnavailable
from messaging_llm_bot.channels.whatsapp.intake import WhatsAppIntake
from messaging_llm_bot.channels.whatsapp.settings import PREFIX, WhatsAppSecrets, conversation_of, number_of
from messaging_llm_bot.channels.whatsapp.turn import WhatsAppTurns
from messaging_llm_bot.channels.whatsapp.webhook import WhatsAppWebhook
from messaging_llm_bot.channels.whatsapp.window import ServiceWindow
from messaging_llm_bot.conversation.job_router import ChannelJobs, owner_digest
from messaging_llm_bot.conversation.notices import send_digest, send_reminder_by
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.service import ChannelService, PerRecord

log = logging.getLogger(__name__)


class WhatsAppService(ChannelService):
    """One running WhatsApp channel: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is
    thread-safe."""

    NAME, TITLE = "whatsapp", "the WhatsApp channel"
    LOCK_FILE, LOCK_WHO = "state/whatsapp.lock", "whatsapp: another WhatsApp bot"

    def __init__(
        self, runtime: Runtime, *, stop_signals: Sequence[int] | None = None, manage_runtime: bool = True
    ) -> None:
        super().__init__(runtime, stop_signals=stop_signals, manage_runtime=manage_runtime)
        self.webhook: WhatsAppWebhook | None = None
        self._secrets = PerRecord(WhatsAppSecrets.of)
        self.inbox: Inbox
        self.channel: WhatsAppChannel
        self.turns: WhatsAppTurns

    @property
    def config(self) -> WhatsAppSettings:
        """The ``whatsapp`` record of the runtime's current settings: a ``/reload`` changes the allowlist, the
        owner, the template and typing at once (the rest needs a restart: config/reloadable.py)."""
        return self.runtime.settings.whatsapp

    @property
    def secrets(self) -> WhatsAppSecrets:
        """The secrets the current record names, read from the environment once per load or ``/reload``."""
        return self._secrets(self.config)

    @property
    def timezone(self) -> str:
        return self.runtime.settings.runtime.timezone

    def problem(self) -> str | None:
        problem = self.secrets.problem
        return f"whatsapp: cannot start: {problem}" if problem else None

    def known_error(self, err: Exception) -> str | None:
        if isinstance(err, OSError):
            hook = self.config.webhook
            return f"whatsapp: the webhook cannot listen on {hook.listen}:{hook.port}: {err}"
        return None

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        workspace = self.runtime.workspace
        config = self.config
        self.inbox = await asyncio.to_thread(Inbox, workspace)
        window = await asyncio.to_thread(ServiceWindow, workspace)
        client = GraphClient(config.base_url, config.phone_number_id, self.secrets.access_token)
        self.channel = WhatsAppChannel(client, window, lambda: self.config)
        self.turns = self.shutdown.turns = WhatsAppTurns(self.runtime, self.inbox, self.channel, lambda: self.config)
        intake = WhatsAppIntake(self)
        await intake.strangers.load()
        self.webhook = WhatsAppWebhook(lambda: self.config, lambda: self.secrets.app_secret, intake.take)
        self.webhook.start()
        self.warn_if_no_one_allowed(config.allowed, "whatsapp.allowed", "Add your number", '["+491701234567"]')
        log.info("whatsapp: serving the webhook on %s for %s", self.webhook.url, [f"+{n}" for n in config.allowed_ids])
        # What the last run left: job runs and the notices that wait, then messages oldest first.
        intake.intake.replay(PREFIX, self.turns.sent_by_owner, notices_first=True)
        await self._join_jobs(loop, intake)
        self.runtime.start_background(notify=self.notify_from_thread)

    async def _join_jobs(self, loop: asyncio.AbstractEventLoop, intake: WhatsAppIntake) -> None:
        digest = owner_digest(self.config.morning_digest, self.timezone, self.morning_digest)
        await self.join_jobs(
            ChannelJobs(
                loop,
                self.inbox,
                owner_conversation=self.owner_conversation,
                start=intake.intake.start_job,
                send_reminder=self.send_reminder,
                digest=digest,
                ask_owner=self.channel.approvals.owner_approver(lambda: self.config.owner_id, loop),
            )
        )

    async def stop_taking(self) -> None:
        if self.webhook is not None:
            self.webhook.stop()

    async def close(self) -> None:
        if hasattr(self, "channel"):
            await self.channel.client.close()

    # -- jobs, reminders, notices -------------------------------------------------------

    def owner_conversation(self, job: Job) -> str | None:
        owner = self.config.owner_id
        return conversation_of(owner) if owner else None

    async def send_reminder(self, chat_id: object, text: str, conversation: object) -> bool:
        """A reminder to its ``wa:`` chat (as the template outside the window): True when it arrived, False to
        try later (no connection; outside the window without a template: it waits for the next message)."""
        number = number_of(str(chat_id))
        send = functools.partial(self.channel.send_text, Address(number), TextOut(text))
        try:
            return await send_reminder_by(self.NAME, chat_id, send, later=GraphUnavailable, refuser="the Graph API")
        except OutsideWindow:
            self.turns.held.setdefault(f"reminder:{chat_id}", conversation_of(number))
            return False

    async def send_notice(self, text: str) -> bool:
        """A notice to the owner, through the inbox and the ledger like a reply: it goes out once, as the
        template outside the window, or waits there for the owner's next message; never lost."""
        owner = self.config.owner_id
        chat = None if owner is None else conversation_of(owner)
        return await self.notice_through_inbox(self.turns, chat, text, "whatsapp.allowed is empty")

    async def morning_digest(self) -> None:
        await send_digest(self.runtime.workspace, self.timezone, self.send_notice)


def run_whatsapp(runtime: Runtime, stop_signals: Sequence[int] | None = (signal.SIGINT, signal.SIGTERM)) -> int:
    """Run the WhatsApp channel for ``runtime`` until interrupted; returns an exit code."""
    return WhatsAppService(runtime, stop_signals=stop_signals).run()
