"""A channel's service in a thread for the tests, and the fixtures' factory that starts one per call and stops
every one still running after the test: what the harnesses of the channels on conversation/service.py's
ChannelService share (Discord, Slack, WhatsApp)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, Self, TypeVar

from tests.waiting import wait_until

Running = TypeVar("Running", bound="RunningChannel")


class RunningChannel:
    """``service.run()`` in a thread; ``start`` returns once the service is ready, and fails when it exited
    instead."""

    def __init__(self, runtime: Any, service: Any, name: str) -> None:
        self.runtime = runtime
        self.service = service
        self.name = name
        self.exit_code: int | None = None
        self._thread = threading.Thread(target=self._run, name=f"{name.lower()}-under-test", daemon=True)

    def _run(self) -> None:
        self.exit_code = self.service.run()

    def start(self) -> Self:
        self._thread.start()
        wait_until(lambda: self.service.ready.is_set() or self.exit_code is not None, 15, f"{self.name} to start")
        assert self.exit_code is None, f"it exited with {self.exit_code}"
        return self

    def stop(self, timeout: float = 20) -> int | None:
        self.service.stop(timeout)
        self._thread.join(timeout)
        return self.exit_code

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()


def starting(config: Callable[[], dict], start: Callable[[dict], Running]) -> Iterator[Callable[..., Running]]:
    """A fixture's body: yields ``run(patch=None)``, which builds the config (``patch`` may change it) and starts
    a channel on it (``start``); the ones started are ``run.running``, and each still running stops after the
    test."""
    running: list[Running] = []

    def run(patch: Callable[[dict], None] | None = None) -> Running:
        made = config()
        if patch:
            patch(made)
        bot = start(made)
        running.append(bot)
        return bot

    run.running = running  # type: ignore[attr-defined]
    yield run
    for bot in running:
        if bot.alive:
            bot.stop()
