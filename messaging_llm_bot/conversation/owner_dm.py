"""The owner's DM on a platform where it has an id of its own, not the owner's (Slack's and Discord's direct
message channel with the bot, Matrix's direct room when none is kept for the owner): where job runs, reminders to
the owner, notices and questions go.

Opened at the start for the owner the config names, and opened again for the new owner when a ``/reload`` names
another: until then there is none (a job's run is not planned, a notice waits), never the old owner's DM, which
would get the new owner's data. Kept in the registry with the owner it was opened for (owner_chats.py), so a run
queued for the old DM is dropped (conversation/item_turns.py's ``run_job``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

from messaging_llm_bot.conversation.job_router import job_router
from messaging_llm_bot.conversation.owner_chats import note_owner_chat
from messaging_llm_bot.conversation.routes import configured_owner, prefix_of
from messaging_llm_bot.conversation.runtime import Runtime

log = logging.getLogger(__name__)


class OwnerDm:
    """One channel's owner's DM: ``open`` at the start; ``id`` the DM of the owner the config names now."""

    def __init__(
        self,
        runtime: Runtime,
        channel: str,
        open_dm: Callable[[str], Awaitable[str]],
        errors: tuple[type[Exception], ...],
    ) -> None:
        self.runtime = runtime
        self.channel = channel
        self._open_dm = open_dm  # the platform's call: the DM's id for a user id
        self._errors = errors  # what that call raises when it cannot (logged; the DM stays unknown)
        self._lock = threading.Lock()  # ``id`` is read on the scheduler's thread too
        self._dm = ""
        self._for: object = None  # the owner ``_dm`` was opened for
        self._tried: object = None  # the owner last opened for (each owner tried once, as at the start)
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def id(self) -> str:
        """The DM's id when it was opened for the owner the config names now, else "": a ``/reload`` named
        another owner, whose DM is then opened (on the channel's loop; the next look finds it)."""
        owner = configured_owner(self.runtime.settings, self.channel)
        with self._lock:
            if owner and owner == self._for:
                return self._dm
            again = bool(owner) and owner != self._tried and self._loop is not None
            if again:
                self._tried = owner
        if again and self._loop is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._open(owner), self._loop)
            except RuntimeError:  # the loop closed: the channel stopped
                pass
        return ""

    async def open(self) -> None:
        """Open the DM of the owner the config names now (at the start); logged when the platform cannot."""
        self._loop = asyncio.get_running_loop()
        owner = configured_owner(self.runtime.settings, self.channel)
        with self._lock:
            self._tried = owner
        if owner:
            await self._open(owner)

    async def _open(self, owner: object) -> None:
        try:
            dm = await self._open_dm(str(owner))
        except self._errors as err:
            log.warning("%s: the owner's DM could not be opened (%s): jobs and notices wait", self.channel, err)
            return
        with self._lock:
            self._dm, self._for = dm, owner
        chat = f"{prefix_of(self.channel)}{dm}"
        await asyncio.to_thread(note_owner_chat, self.runtime.workspace, self.channel, chat, owner)
        job_router(self.runtime).look_soon()  # the runs that waited for it are planned now, not at the next look
