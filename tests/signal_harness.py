"""Shared helpers for the Signal tests: a SignalService running in a thread against FakeSignalDaemon."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from tests.fakes.signal_daemon import FakeSignalDaemon
from tests.waiting import REMINDER_POLL_SECONDS
from tests.waiting import wait_until as wait_for  # noqa: F401 - the Signal tests' name for it

BOT = "+15550000000"
OWNER = "+15551110001"
FRIEND = "+15551110002"
STRANGER = "+19990000000"
GROUP = "R3JvdXBJZEZvclRoZVRlc3RzMTIzNDU2Nzg5MDEyMzQ="


def signal_config(base: dict, daemon: FakeSignalDaemon, **overrides: Any) -> dict:
    """``base`` (the conftest bot_config) plus a signal section pointing at ``daemon``."""
    config = copy.deepcopy(base)
    config["signal"] = {
        "enabled": True,
        "base_url": daemon.base_url,
        "account": daemon.account,
        "allowed": [OWNER, FRIEND],
        **overrides,
    }
    config.setdefault("memory", {"enabled": False})
    return config


class RunningSignal:
    """A SignalService running in a thread; use as a context manager."""

    def __init__(self, runtime: Any, **kwargs: Any) -> None:
        kwargs.setdefault("reminder_poll_seconds", REMINDER_POLL_SECONDS)
        kwargs.setdefault("backoff_max", 0.5)
        # Imported here: xdist's controller loads this harness (conftest's pytest_plugins) and runs no bot.
        from messaging_llm_bot.channels.signal.service import SignalService

        self.service: SignalService = SignalService(runtime, stop_signals=None, **kwargs)
        self.exit_code: int | None = None
        self._thread = threading.Thread(target=self._run, name="signal-bot-under-test", daemon=True)

    def _run(self) -> None:
        self.exit_code = self.service.run()

    def start(self) -> "RunningSignal":
        self._thread.start()
        if not self.service.ready.wait(15):
            raise TimeoutError(f"signal bot did not become ready (exit code {self.exit_code})")
        return self

    def stop(self, timeout: float = 15) -> int | None:
        self.service.stop()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("signal bot thread did not stop")
        return self.exit_code

    def __enter__(self) -> "RunningSignal":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive():
            self.stop()


def styled(record: dict) -> list[tuple[str, str]]:
    """(styled text, STYLE) pairs of a sent message, read back through the UTF-16 ranges."""
    raw = record["message"].encode("utf-16-le", "surrogatepass")
    return [(raw[2 * s : 2 * (s + n)].decode("utf-16-le", "surrogatepass"), style) for s, n, style in record["styles"]]


@pytest.fixture
def daemon():
    """A started FakeSignalDaemon for the bot's account (import it into a test module to use it)."""
    with FakeSignalDaemon(BOT) as fake:
        yield fake


@pytest.fixture
def start(bot_config, daemon, workspace, tmp_path):
    """Factory: ``start(patch=None, backoff_max=None, **signal_overrides)`` runs the bot against ``daemon``; all
    stop after the test. ``patch(config)`` may change the config before the bot is built; ``backoff_max``: the
    longest wait before the daemon is tried again (None: the harness's 0.5 s)."""
    from tests.telegram_harness import make_runtime

    bots: list[RunningSignal] = []

    def run(patch=None, backoff_max: float | None = None, **signal_overrides) -> RunningSignal:
        wait_for(lambda: daemon.connected == 0, what="the event stream of a stopped bot to close")
        config = signal_config(bot_config, daemon, **signal_overrides)
        if patch:
            patch(config)
        service = {} if backoff_max is None else {"backoff_max": backoff_max}
        bot = RunningSignal(make_runtime(config, workspace, tmp_path), **service).start()
        daemon.wait_connected()
        bots.append(bot)
        return bot

    yield run
    for bot in bots:
        bot.__exit__()
