"""A graceful stop of the Telegram bot: no new messages, running turns get ``runtime.shutdown_timeout_seconds``,
then they are cancelled and their messages stay in the inbox for the next start. A second signal stops at once."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Sequence

from telegram.ext import Application

from messaging_llm_bot.channels.telegram.turn import TurnRunner

log = logging.getLogger(__name__)


class GracefulStop:
    """The stop of one bot; ``loop``, ``app`` and ``turns`` are set as the bot is built and started."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.app: Application | None = None
        self.turns: TurnRunner | None = None
        self._deadline = 0.0
        self._watchdog: asyncio.TimerHandle | None = None

    def install_signal_handlers(self, stop_signals: Sequence[int] | None) -> None:
        """Our own handlers instead of PTB's: PTB's stop would answer every queued update, unbounded."""
        for sig in stop_signals or ():
            try:
                self.loop.add_signal_handler(sig, self.begin, signal.Signals(sig).name)
            except (NotImplementedError, RuntimeError, ValueError) as err:  # not the main thread / platform
                log.warning("telegram: cannot handle signal %s (%s); stop with stop()", sig, err)

    def begin(self, reason: str = "stop requested") -> None:
        """Stop taking new messages, give running turns ``timeout`` seconds, then stop (loop thread)."""
        if self.stopping:  # a second Ctrl-C / SIGTERM: do not wait any longer
            self.give_up()
            return
        self.stopping = True
        if self.turns is not None:
            self.turns.stopping = True
            running = self.turns.active
        else:
            running = 0
        log.info(
            "telegram: %s: stopping; waiting up to %.0f s for %d turn(s) in flight; messages not yet "
            "answered stay in the inbox",
            reason,
            self.timeout,
            running,
        )
        loop = self.loop or asyncio.get_event_loop()
        self._deadline = loop.time() + self.timeout
        self._watchdog = loop.call_later(self.timeout, self.give_up)
        if self.app is not None:
            self._stop_app()

    def _stop_app(self, tries: int = 0) -> None:
        """PTB's stop_running(), made to stick while the application is still starting: after post_init
        it only sets a marker PTB has already checked, so a SIGTERM right after start-up was lost and the
        bot never stopped. Until the application runs, ask again; once it runs, give its start() a moment
        to return into run_forever first (stopping the loop under start() would break it), as ``stop()``."""
        app = self.app
        if app.running:
            if tries:
                self.loop.call_later(0.1, app.stop_running)
            else:
                app.stop_running()
            return
        app.stop_running()  # still in post_init: the marker PTB checks right after it
        if tries < 400 and not self.loop.is_closed():  # 20 s: PTB gave up starting, or stopped already
            self.loop.call_later(0.05, self._stop_app, tries + 1)

    def give_up(self) -> None:
        """Cancel the turns still running: their messages stay in the inbox for the next start."""
        if self.turns is None:
            return
        cancelled = self.turns.cancel_all()
        if cancelled:
            log.warning(
                "telegram: %d turn(s) did not finish within %.0f s; their messages stay in the inbox "
                "and are answered at the next start",
                cancelled,
                self.timeout,
            )

    async def finish_turns(self) -> None:
        """After PTB stopped (it waited for the update handlers): wait for the turns outside PTB (start-up
        replay) until the deadline, cancel the rest, and free the turn pool."""
        if self.turns is not None:
            left = max(0.0, self._deadline - asyncio.get_running_loop().time()) if self.stopping else 0.0
            if not await self.turns.wait_idle(left):
                self.give_up()
                await self.turns.wait_idle(1.0)
            self.turns.pool.shutdown()
        if self._watchdog is not None:
            self._watchdog.cancel()
