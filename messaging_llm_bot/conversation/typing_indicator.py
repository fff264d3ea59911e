"""The "typing…" indicator while the model works, the same on every channel that shows one by a repeated
request (Signal, Matrix): shown again every ``every`` seconds, before the platform drops it, and turned off
at the end; best effort, never raises: a send that fails with one of the channel's ``errors`` is a debug line."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class Typing:
    """ "typing…" in one chat; ``send(True)`` shows it, ``send(False)`` turns it off."""

    def __init__(
        self,
        send: Callable[[bool], Awaitable[None]],
        every: float,
        *,
        enabled: bool = True,
        shown: bool = False,
        errors: tuple[type[Exception], ...] = (),
        where: str = "",
    ) -> None:
        self._send, self.every, self.enabled = send, every, enabled
        self.errors, self.where = errors, where  # what a failed send may raise; the chat, as its log line names it
        self.shown = shown  # the first indicator already went out (Signal batches it with the read receipt)
        self._task: asyncio.Task[None] | None = None

    async def send(self, on: bool) -> None:
        try:
            await self._send(on)
        except self.errors as err:
            log.debug("typing in %s failed: %s", self.where, err)

    async def _loop(self) -> None:
        while True:
            if not self.shown:
                await self.send(True)
            self.shown = False
            await asyncio.sleep(self.every)

    def start(self) -> None:
        if self.enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        showing = self._task is not None or self.shown
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._task, self.shown = None, False
        if showing:
            await self.send(False)
