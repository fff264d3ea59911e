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


class StoppableApplication(Application):
    """PTB's Application whose stop sticks while it starts. PTB's ``stop_running()`` stops the loop, which
    ends ``run_forever()`` only there: called while ``run_polling`` is still in ``start()`` (under
    ``run_until_complete``), the loop's stop ends that call instead and the bot then runs on for ever; called
    before, it only sets a marker PTB checks once, right after post_init. ``stop_when_running()`` is kept
    and done as the application enters ``run_forever()``: an event, not a sleep."""

    in_run_forever = False
    stop_wanted = False

    async def start(self) -> None:
        await super().start()
        loop = asyncio.get_running_loop()
        # start()'s task completing schedules the callback that stops run_until_complete(start()), in the same
        # batch as this first callback; what that callback schedules runs in the next batch, which is
        # run_forever()'s first (asyncio: callbacks scheduled after stop() run the next time the loop runs).
        loop.call_soon(loop.call_soon, self._entered_run_forever)

    def _entered_run_forever(self) -> None:
        self.in_run_forever = True
        if self.stop_wanted:
            self.stop_running()

    def stop_when_running(self) -> None:
        """Stop ``run_polling``/``run_webhook`` now, or as soon as it runs (on the loop's thread)."""
        self.stop_wanted = True
        if self.in_run_forever or not self.running:
            self.stop_running()  # in run_forever: stops it; before start(): the marker PTB checks after post_init


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

    def _stop_app(self) -> None:
        app = self.app
        if isinstance(app, StoppableApplication):
            app.stop_when_running()
        else:  # an Application built elsewhere: PTB's own stop, which may be lost while it starts
            app.stop_running()

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
