"""A graceful stop of the Telegram bot (conversation/shutdown.py is the rest): PTB's own stop, made to stick
while the application is still starting."""

from __future__ import annotations

import asyncio

from telegram.ext import Application

from messaging_llm_bot.conversation.shutdown import ChannelStop


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


class GracefulStop(ChannelStop):
    """The stop of one bot (conversation/shutdown.py); ``loop``, ``app`` and ``turns`` are set as the bot is built
    and started. The signal handlers are ours, not PTB's: PTB's stop would answer every queued update."""

    def __init__(self, timeout: float) -> None:
        super().__init__("telegram", timeout, on_begin=self._stop_app)
        self.app: Application | None = None

    def _stop_app(self) -> None:
        app = self.app
        if isinstance(app, StoppableApplication):
            app.stop_when_running()
        elif app is not None:  # an Application built elsewhere: PTB's own stop, which may be lost while it starts
            app.stop_running()

    async def finish_turns(self) -> None:
        """After PTB stopped (it waited for the update handlers): the turns outside PTB (start-up replay)."""
        await self.finish()
