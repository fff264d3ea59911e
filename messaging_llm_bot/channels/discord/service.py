"""The Discord channel running (conversation/service.py's ChannelService): logged in, the gateway connected
(discord.py reconnects and resumes), what a crash left answered, what was written while no gateway session was
connected read from the channels' history (catchup.py), the job scheduler joined (job runs and reminders
to the owner's DM), collectors' notices; a stop gives running turns ``shutdown_timeout_seconds``.

Start-up refuses, with one sentence and exit code 2, a config that cannot run (no token) or a missing discord.py;
with exit code 1 a workspace where another Discord bot runs (a lock file), a token Discord refuses, or an
application without the message content intent (the gateway's 4014, also when it comes later).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from assistant_framework.config.settings import DiscordSettings
from assistant_framework.inbox import Inbox
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.contract import DeliveryError, TextOut
from messaging_llm_bot.channels.discord.api import DiscordUnavailable, call
from messaging_llm_bot.channels.discord.channel import DiscordChannel
from messaging_llm_bot.channels.discord.gateway import INTENTS_HELP, log_in, make_client
from messaging_llm_bot.channels.discord.intake import DiscordIntake
from messaging_llm_bot.channels.discord.settings import PREFIX, DiscordToken, api_url, conversation_of
from messaging_llm_bot.channels.discord.turn import DiscordTurns, address_of
from messaging_llm_bot.conversation.job_router import ChannelJobs
from messaging_llm_bot.conversation.notices import send_reminder_by
from messaging_llm_bot.conversation.owner_dm import OwnerDm
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.service import ChannelService

if TYPE_CHECKING:
    import discord

log = logging.getLogger(__name__)


class StartFailed(Exception):
    """The channel cannot run: the sentence for the owner's screen."""


class DiscordService(ChannelService):
    """One running Discord channel: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is
    thread-safe."""

    NAME, TITLE = "discord", "the Discord channel"
    LOCK_FILE, LOCK_WHO = "state/discord.lock", "discord: another Discord bot"

    def __init__(
        self, runtime: Runtime, *, stop_signals: Sequence[int] | None = None, manage_runtime: bool = True
    ) -> None:
        super().__init__(runtime, stop_signals=stop_signals, manage_runtime=manage_runtime)
        self.dm: OwnerDm  # the owner's DM channel: jobs, reminders and notices go there
        self._gateway: asyncio.Task[None] | None = None
        self.intake: DiscordIntake | None = None
        self._catching_up: set[asyncio.Task[None]] = set()  # the catch-ups running (a new session each)
        self.client: discord.Client | None = None
        self.inbox: Inbox
        self.channel: DiscordChannel
        self.turns: DiscordTurns

    @property
    def config(self) -> DiscordSettings:
        """The ``discord`` record of the runtime's current settings: a ``/reload`` changes the allowlist, the owner
        and streaming at once (the rest needs a restart: config/reloadable.py)."""
        return self.runtime.settings.discord

    def problem(self) -> str | None:
        problem = DiscordToken.of(self.config).problem
        if problem:
            return f"discord: cannot start: {problem}"
        if importlib.util.find_spec("discord") is None:
            return "discord: cannot start: the Discord channel needs discord.py: pip install -e '.[discord]'"
        return None

    def known_error(self, err: Exception) -> str | None:
        return f"discord: cannot start: {err}" if isinstance(err, StartFailed) else None

    async def serve(self) -> None:
        config = self.config
        self.inbox = await asyncio.to_thread(Inbox, self.runtime.workspace)
        self.client = make_client(api_url(config), lambda message: intake.take(message))  # intake: made below
        self.channel = DiscordChannel(self.client, api_url(config), lambda: self.config.owner_id)
        self.turns = self.shutdown.turns = DiscordTurns(self.runtime, self.inbox, self.channel, lambda: self.config)
        self.intake = intake = DiscordIntake(self)
        await intake.strangers.load()
        await asyncio.to_thread(intake.cursor.load)
        self._gateway = await self._connect(self.client)
        await self._owner_dm(self.client)
        self.warn_if_no_one_allowed(config.allowed, "discord.allowed", "Add your user id", '["80351110224678912"]')
        log.info("discord: connected to the gateway as %s for %s", self.client.user, list(config.allowed))
        intake.intake.replay(PREFIX)  # job runs, then messages and notices oldest first
        self._catch_up()  # then what was written while no session was connected, from the channels' history
        loop = asyncio.get_running_loop()
        await self.join_jobs(
            ChannelJobs(
                loop,
                self.inbox,
                owner_conversation=self.owner_conversation,
                start=intake.intake.start_job,
                send_reminder=self.send_reminder,
                ask_owner=self.channel.approvals.owner_approver(lambda: self._owner_chat(), loop),
            )
        )
        self.runtime.start_background(notify=self.notify_from_thread)

    async def _connect(self, client: discord.Client) -> asyncio.Task[None]:
        """Log in, connect the gateway; the gateway's task (it ends only when the client closes or fails: then
        the channel stops, and ``close`` says why)."""
        import discord

        try:
            await log_in(client, DiscordToken.of(self.config).bot_token)
        except discord.LoginFailure:
            raise StartFailed("Discord refused the bot token (401): copy it again from the Bot page") from None
        except (discord.HTTPException, discord.GatewayNotFound, OSError) as err:
            raise StartFailed(f"Discord cannot be reached: {type(err).__name__}") from None
        connected = asyncio.Event()

        async def on_connect() -> None:  # each READY, a new session (after a RESUME Discord replays what it missed)
            if connected.is_set():
                self._catch_up()
            connected.set()

        client.on_connect = on_connect  # type: ignore[attr-defined]
        gateway = asyncio.create_task(client.connect(reconnect=True), name="discord-gateway")
        waiting = asyncio.create_task(connected.wait())
        await asyncio.wait({gateway, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if gateway.done():
            raise _gateway_failure(gateway)
        gateway.add_done_callback(self._gateway_ended)
        return gateway

    def _catch_up(self) -> None:
        if self.intake is not None and not self.stopping:
            task = asyncio.get_running_loop().create_task(self.intake.catch_up(), name="discord-catch-up")
            self._catching_up.add(task)
            task.add_done_callback(self._catching_up.discard)

    def _gateway_ended(self, _task: asyncio.Task[None]) -> None:
        if not self.stopping:  # ended on its own (discord.py gave up): the channel stops, ``close`` says why
            self.begin_shutdown("the gateway connection ended")

    async def _owner_dm(self, client: discord.Client) -> None:
        """The owner's DM, opened again for a new owner a ``/reload`` names (conversation/owner_dm.py)."""

        async def open_dm(owner: str) -> str:
            return str((await call("open the owner's DM", client.http.start_private_message(int(owner))))["id"])

        self.dm = OwnerDm(self.runtime, self.NAME, open_dm, (DiscordUnavailable, DeliveryError, KeyError, ValueError))
        await self.dm.open()

    def _owner_chat(self) -> str | None:
        dm = self.dm.id
        return conversation_of(dm) if dm else None

    async def close(self) -> None:
        """The client closed, what discord.py left running ended before the loop closes (its wait for the
        guilds after READY); a gateway that ended on its own says why. The catch-up's cursor is written first."""
        if self.intake is not None:
            await self.intake.cursor.flush()
        if self.client is not None:
            await self.client.close()
        gateway = self._gateway
        left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task() and task is not gateway]
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)
        if gateway is not None and gateway.done() and not gateway.cancelled() and gateway.exception() is not None:
            raise _gateway_failure(gateway)

    # -- jobs, reminders, notices -------------------------------------------------------

    def owner_conversation(self, job: Job) -> str | None:
        return self._owner_chat()

    async def send_reminder(self, chat_id: object, text: str, conversation: object) -> bool:
        """A reminder to its ``dc:`` conversation: True when it arrived, False to try later."""
        send = functools.partial(self.channel.send_text, address_of(str(chat_id)), TextOut(text))
        return await send_reminder_by(self.NAME, chat_id, send, later=DiscordUnavailable, refuser="Discord")

    async def send_notice(self, text: str) -> bool:
        """A notice to the owner's DM, through the inbox and the ledger like a reply: it goes out once."""
        missing = "no owner DM (discord.allowed empty or refused)"
        return await self.notice_through_inbox(self.turns, self._owner_chat(), text, missing)


def _gateway_failure(gateway: asyncio.Task[None]) -> Exception:
    """The gateway's task ended on its own: why, as the sentence for the owner (an unexpected error as it is)."""
    import discord

    err = gateway.exception()
    if isinstance(err, discord.PrivilegedIntentsRequired):
        return StartFailed(INTENTS_HELP)
    if isinstance(err, discord.ConnectionClosed):
        return StartFailed(f"the gateway closed the connection ({err.code}: {err.reason})")
    return err if isinstance(err, Exception) else StartFailed("the gateway connection ended")
