"""The Slack channel running: the Events API's request URL listening (or Socket Mode connected), what a crash left
answered, the job scheduler joined (job runs and reminders to the owner's DM), collectors' notices; a stop gives
running turns ``shutdown_timeout_seconds`` (the run, the lock, the loop and the stop: conversation/service.py).

Start-up refuses, with one sentence and exit code 2, a config that cannot run (the token's or the signing
secret's or the app-level token's variable unset); with exit code 1 a workspace where another Slack bot runs (a
lock file), a token Slack refuses, or an address the request URL cannot listen on.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import logging
import signal
from collections.abc import Sequence

from assistant_framework.config.settings import SlackSettings
from assistant_framework.inbox import Inbox
from assistant_framework.jobs import Job
from messaging_llm_bot.agent.guard import ApprovalRequest
from messaging_llm_bot.channels.contract import Address, DeliveryError, TextOut
from messaging_llm_bot.channels.slack.api import SlackClient, SlackUnavailable
from messaging_llm_bot.channels.slack.channel import SlackChannel
from messaging_llm_bot.channels.slack.intake import SlackIntake
from messaging_llm_bot.channels.slack.settings import PREFIX, SlackSecrets, api_url, conversation_of
from messaging_llm_bot.channels.slack.socketmode import AppTokenRefused, SocketMode
from messaging_llm_bot.channels.slack.turn import SlackTurns, address_of
from messaging_llm_bot.channels.slack.webhook import SlackWebhook
from messaging_llm_bot.conversation.approvals import Answer
from messaging_llm_bot.conversation.job_router import ChannelJobs
from messaging_llm_bot.conversation.notices import send_reminder_by
from messaging_llm_bot.conversation.owner_dm import OwnerDm
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.service import ChannelService, PerRecord

log = logging.getLogger(__name__)


class BotTokenRefused(Exception):
    """auth.test at start: Slack refused the bot token (invalid_auth, not_authed, account_inactive,
    token_revoked); serving with it would answer no one."""


class SlackService(ChannelService):
    """One running Slack channel: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is
    thread-safe."""

    NAME, TITLE = "slack", "the Slack channel"
    LOCK_FILE, LOCK_WHO = "state/slack.lock", "slack: another Slack bot"

    def __init__(
        self, runtime: Runtime, *, stop_signals: Sequence[int] | None = None, manage_runtime: bool = True
    ) -> None:
        super().__init__(runtime, stop_signals=stop_signals, manage_runtime=manage_runtime)
        self.webhook: SlackWebhook | None = None
        self.socket: SocketMode | None = None  # slack.socket_mode: the events over a websocket instead
        self.bot_user = ""  # the bot's own user id (auth.test): its own messages are passed over
        self._secrets = PerRecord(SlackSecrets.of)
        self.inbox: Inbox
        self.channel: SlackChannel
        self.turns: SlackTurns
        self.dm: OwnerDm  # the owner's DM (conversations.open): jobs, reminders and notices go there

    @property
    def owner_dm(self) -> str:
        """The DM of the owner the config names now ("" while it is not open: conversation/owner_dm.py)."""
        return self.dm.id

    @property
    def config(self) -> SlackSettings:
        """The ``slack`` record of the runtime's current settings: a ``/reload`` changes the allowlist, the owner
        and streaming at once (the rest needs a restart: config/reloadable.py)."""
        return self.runtime.settings.slack

    @property
    def secrets(self) -> SlackSecrets:
        """The secrets the current record names, read from the environment once per load or ``/reload``."""
        return self._secrets(self.config)

    def problem(self) -> str | None:
        if self.secrets.problem:
            return f"slack: cannot start: {self.secrets.problem}"
        if importlib.util.find_spec("slack_sdk") is None:
            return "slack: cannot start: the Slack channel needs slack-sdk: pip install -e '.[slack]'"
        return None

    def known_error(self, err: Exception) -> str | None:
        if isinstance(err, OSError):
            hook = self.config.webhook
            return f"slack: the request URL cannot listen on {hook.listen}:{hook.port}: {err}"
        if isinstance(err, (BotTokenRefused, DeliveryError)):
            return f"slack: cannot start: Slack refused the bot token, slack.bot_token_env ({err})"
        if isinstance(err, AppTokenRefused):
            return f"slack: cannot start: Slack refused the app-level token, slack.app_token_env ({err})"
        return None

    async def _who(self, client: SlackClient) -> None:
        """The bot's user id (kept for the run), and the owner's DM; ``BotTokenRefused`` ends the start when
        Slack refuses the token, while an outage goes on (replies wait in the inbox and are tried again)."""
        try:
            self.bot_user = str((await client.auth_test()).get("user_id") or "")
        except SlackUnavailable as err:
            if err.token_refused:
                raise BotTokenRefused(str(err)) from None
            log.warning("slack: auth.test failed (%s); going on", err)
        self.dm = OwnerDm(self.runtime, self.NAME, client.open_dm, (SlackUnavailable, DeliveryError))
        await self.dm.open()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        config = self.config
        self.inbox = await asyncio.to_thread(Inbox, self.runtime.workspace)
        client = SlackClient(api_url(config), self.secrets.bot_token)
        self.channel = SlackChannel(client)
        self.turns = self.shutdown.turns = SlackTurns(self.runtime, self.inbox, self.channel, lambda: self.config)
        await self._who(client)
        intake = SlackIntake(self)
        await intake.strangers.load()
        await self._take_events(intake)
        self.warn_if_no_one_allowed(config.allowed, "slack.allowed", "Add your user id", '["U0123ABCD"]')
        intake.intake.replay(PREFIX, notices_first=True)  # job runs and the notices that wait, then messages
        await self.join_jobs(
            ChannelJobs(
                loop,
                self.inbox,
                owner_conversation=self.owner_conversation,
                start=intake.intake.start_job,
                send_reminder=self.send_reminder,
                ask_owner=self.channel.questions.approver(self._ask_owner, loop, "the slack owner's DM"),
            )
        )
        self.runtime.start_background(notify=self.notify_from_thread)

    async def _take_events(self, intake: SlackIntake) -> None:
        """Events in: Socket Mode connected, or the Events API's request URL listening."""
        config = self.config
        if config.socket_mode:
            self.socket = SocketMode(config, self.secrets.app_token, intake.take, intake.act, intake.command)
            await self.socket.start()
            log.info("slack: taking events over Socket Mode for %s", list(config.allowed))
            return
        self.webhook = SlackWebhook(
            lambda: self.config, lambda: self.secrets.signing_secret, intake.take, intake.act, intake.command
        )
        self.webhook.start()
        log.info("slack: serving the Events API on %s for %s", self.webhook.url, list(config.allowed))

    async def stop_taking(self) -> None:
        if self.webhook is not None:
            self.webhook.stop()
        if self.socket is not None:
            await self.socket.stop()  # no new events; the turns under way finish after

    # -- jobs, reminders, notices -------------------------------------------------------

    async def _ask_owner(self, request: ApprovalRequest) -> Answer:
        """A served client's ``ask`` call, asked in the owner's DM (``ChannelJobs.ask_owner``); no DM: not done."""
        if not self.owner_dm:
            log.warning("slack: no owner DM to ask for confirmation in; not done")
            return False
        return await self.turns.ask(Address(self.owner_dm), request)

    def owner_conversation(self, job: Job) -> str | None:
        return conversation_of(self.owner_dm) if self.owner_dm else None

    async def send_reminder(self, chat_id: object, text: str, conversation: object) -> bool:
        """A reminder to its ``sl:`` conversation: True when it arrived, False to try later."""
        send = functools.partial(self.channel.send_text, address_of(str(chat_id)), TextOut(text))
        return await send_reminder_by(self.NAME, chat_id, send, later=SlackUnavailable, refuser="the Slack Web API")

    async def send_notice(self, text: str) -> bool:
        """A notice to the owner's DM, through the inbox and the ledger like a reply: it goes out once."""
        chat = conversation_of(self.owner_dm) if self.owner_dm else None
        return await self.notice_through_inbox(self.turns, chat, text, "no owner DM (slack.allowed empty or refused)")


def run_slack(runtime: Runtime, stop_signals: Sequence[int] | None = (signal.SIGINT, signal.SIGTERM)) -> int:
    """Run the Slack channel for ``runtime`` until interrupted; returns an exit code."""
    return SlackService(runtime, stop_signals=stop_signals).run()
