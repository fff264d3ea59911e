"""The Matrix channel running: log in, answer what a crash left, join the job scheduler, start reminders and
the digest, then sync until stopped; a stop gives running turns ``shutdown_timeout_seconds``. Once the first
sync is handled, the owner the config names gets a direct room (made and they invited) when none is kept for
them; again after a ``/reload`` that names another owner (conversation/owner_dm.py).

Start-up refuses, with one sentence and exit code 2, a config that cannot log in (no credential); with exit
code 1 a homeserver that refuses the login or a workspace where another Matrix bot runs (a lock file). A
homeserver that cannot be reached at start is retried with backoff, logged once.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Sequence

from assistant_framework.config.settings import MatrixSettings
from assistant_framework.inbox import Inbox
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.matrix.channel import MatrixChannel
from messaging_llm_bot.channels.matrix.client import LoginFailed, MatrixClient, MatrixUnavailable
from messaging_llm_bot.channels.matrix.events import SyncReader
from messaging_llm_bot.channels.matrix.settings import PREFIX, MatrixLogin, conversation_of
from messaging_llm_bot.channels.matrix.state import StateFile
from messaging_llm_bot.channels.matrix.turn import MatrixTurns
from messaging_llm_bot.conversation.notices import ChannelNotices
from messaging_llm_bot.conversation.outage import Backoff
from messaging_llm_bot.conversation.owner_dm import OwnerDm
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.service import ChannelService

log = logging.getLogger(__name__)


class MatrixService(ChannelService):
    """One running Matrix channel: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is
    thread-safe."""

    NAME, TITLE = "matrix", "the Matrix channel"
    LOCK_FILE, LOCK_WHO = "state/matrix.lock", "matrix: another Matrix bot"

    # The parts made when the channel starts (``serve``).
    state: StateFile
    inbox: Inbox
    channel: MatrixChannel
    turns: MatrixTurns
    reader: SyncReader
    notices: ChannelNotices
    dm: OwnerDm  # opens the owner's direct room when none is kept for the owner the config names

    @property
    def config(self) -> MatrixSettings:
        """The ``matrix`` record of the runtime's current settings: a ``/reload`` changes the allowlist, the
        owner, the group mode and typing at once (the rest needs a restart: config/reloadable.py)."""
        return self.runtime.settings.matrix

    def problem(self) -> str | None:
        problem = MatrixLogin.of(self.config).problem
        return f"matrix: cannot log in: {problem}" if problem else None

    def known_error(self, err: Exception) -> str | None:
        return f"matrix: {err}" if isinstance(err, LoginFailed) else None

    async def _login(self) -> bool:
        """Log in, retrying while the homeserver cannot be reached; False when a stop came first."""
        backoff, told = Backoff(self.backoff_max), False
        while not self.stopping:
            try:
                await self.channel.client.login()
                await asyncio.to_thread(self.state.update, device_id=self.channel.client.device_id)
                return True
            except MatrixUnavailable as err:
                if not told:
                    told = True
                    log.warning("matrix: cannot log in yet: %s; retrying", err)
                await self.sleep(backoff.next())
        return False

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        self.notices = self.owner_notices(
            lambda chat, text, conversation: self.turns.send_to(chat, text, conversation), self._owner_conversation
        )
        workspace = self.runtime.workspace
        self.state = await asyncio.to_thread(StateFile, workspace)
        self.inbox = await asyncio.to_thread(Inbox, workspace)
        client = MatrixClient(self.config, self.state.state.device_id)
        self.channel = MatrixChannel(client)
        self.turns = self.shutdown.turns = MatrixTurns(self.runtime, self.inbox, self.channel, lambda: self.config)
        self.reader = reader = SyncReader(self)
        self.dm = OwnerDm(self.runtime, self.NAME, self._open_owner_room, (MatrixUnavailable, DeliveryError))
        if not await self._login():
            return
        how, also = "Add your Matrix id", " and joins no room"
        self.warn_if_no_one_allowed(self.config.allowed, "matrix.allowed", how, '["@you:example.org"]', also)
        log.info("matrix: serving %s on %s for %s", client.user_id, client.homeserver, list(self.config.allowed))
        reader.intake.replay(PREFIX, self.turns.sent_by_owner)  # job runs, then messages oldest first (never refused)
        await self.join_jobs_sending(
            self.notices,
            self.inbox,
            owner_conversation=self.owner_conversation,
            start=reader.intake.start_job,
            morning_digest=self.config.morning_digest,
            ask_owner=self.channel.approvals.owner_approver(self._owner_room, loop),
        )
        self.reading(reader.consume())
        synced, stopped = self.reading(reader.synced.wait()), self.reading(self.shutdown_requested())
        await asyncio.wait({synced, stopped}, return_when=asyncio.FIRST_COMPLETED)  # ready: the first sync handled
        if synced.done():
            await self.dm.open()

    async def close(self) -> None:
        if hasattr(self, "channel"):
            await self.channel.client.close()

    # -- jobs, reminders, notices -------------------------------------------------------

    def owner_conversation(self, job: Job) -> str | None:
        """Where a Matrix job's runs go: the owner's direct room."""
        room = self._owner_room()
        return conversation_of(room) if room else None

    def _owner_room(self) -> str | None:
        """The direct room of the owner the config names now: the one they last wrote in, else the one opened
        for them; none while it is being opened (never the old owner's, once a ``/reload`` named another)."""
        return self.state.owner_room_of(self.config.owner_id) or self.dm.id or None

    async def _open_owner_room(self, owner: str) -> str:
        """The direct room kept for ``owner``, or a new one they are invited to (kept for them, as one they
        wrote in is)."""
        room = self.state.owner_room_of(owner)
        if room:
            return room
        room = await self.channel.client.open_direct(owner)
        await asyncio.to_thread(self.state.update, owner_room=room, owner=owner)
        log.info("matrix: opened the direct room %s with the owner %s (invited)", room, owner)
        return room

    def _owner_conversation(self) -> str | None:
        """Where notices and the digest go: the owner's direct room."""
        room = self._owner_room()
        if not room:
            log.warning("matrix: a notice for the owner waits for the owner's direct room to be opened")
        return conversation_of(room) if room else None


def run_matrix(runtime: Runtime, stop_signals: Sequence[int] | None = (signal.SIGINT, signal.SIGTERM)) -> int:
    """Run the Matrix channel for ``runtime`` until interrupted; returns an exit code."""
    return MatrixService(runtime, stop_signals=stop_signals).run()
