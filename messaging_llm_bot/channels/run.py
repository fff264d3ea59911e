"""Run every enabled chat channel in one process: one workspace, memory and skill set, separate chats.

Which channels there are is the registry's (conversation/routes.py, one ``Route`` each); how one starts is
its folder's ``entry.py`` (``runner(runtime, options)``), found by the route's name, so a new channel is
new files plus its ``Route`` line. The first channel named keeps the main thread (its stop signals: Telegram's
library wants them there) and shuts the runtime down; each other runs in a thread of its own with its own
event loop and is stopped first at shutdown (``BotRuntime.on_shutdown``), so no turn uses the model client
after it is closed.
"""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from assistant_framework.config.settings import Settings
from messaging_llm_bot.channels import channel_module
from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.conversation.routes import configured_channels
from messaging_llm_bot.conversation.runtime import Runtime

if TYPE_CHECKING:
    from assistant_framework.web.server import Mount  # Tornado: loaded only when the page runs

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
JOIN_SECONDS = 5.0  # a side channel's thread, once it was told to stop and the runtime is down

#: ``runner(runtime, options)`` in ``channels/<name>/entry.py``.
RunnerFactory = Callable[[Runtime, RunOptions], ChannelRunner]


def enabled_frontends(settings: Settings) -> list[str]:
    """Chat channels the config turns on, in the registry's order (conversation/routes.py)."""
    return configured_channels(settings)


def runner_factory(name: str) -> RunnerFactory:
    """The ``runner`` of ``channels/<name>/entry.py``; imported only when that channel starts (a Telegram-only
    start does not load Signal's modules, and the reverse)."""
    entry = channel_module(name, "entry", required=True)
    factory: RunnerFactory = entry.runner
    return factory


def web_mounts(runtime: Runtime) -> list[Mount]:
    """The routes the configured channels serve on the bot's web page: an ``entry.py``'s ``web_mount(runtime)``,
    where it has one (the web chat's Chat page)."""
    mounts: list[Mount] = []
    for name in configured_channels(runtime.settings):
        entry = channel_module(name, "entry", required=True)
        mount: Callable[[Runtime], Mount] | None = getattr(entry, "web_mount", None)
        if mount is not None:
            mounts.append(mount(runtime))
    return mounts


def run_chat_frontends(runtime: Runtime, names: list[str]) -> int:
    """Run ``names`` until stopped (SIGINT/SIGTERM); returns the worst exit code."""
    others = names[1:]
    timeout = runtime.settings.runtime.shutdown_timeout_seconds
    factories = [runner_factory(name) for name in names]  # each looked up before any starts (RegistrationError)
    side = [factory(runtime, RunOptions(manage_runtime=False)) for factory in factories[1:]]
    codes: list[int] = []
    threads: list[threading.Thread] = []
    for name, runner in zip(others, side, strict=True):
        thread = threading.Thread(target=_run_into, args=(runner, codes), name=f"{name}-channel", daemon=True)
        runtime.on_shutdown(functools.partial(_stop_and_wait, runner, thread))
        threads.append(thread)
        thread.start()
    code = factories[0](runtime, RunOptions(stop_signals=STOP_SIGNALS)).run()
    if any(thread.is_alive() for thread in threads):  # the first ended before it shut the runtime down
        runtime.shutdown(timeout)  # its hooks stop the others first
    for thread in threads:
        thread.join(JOIN_SECONDS)
    return max([code, *codes])


def _run_into(runner: ChannelRunner, codes: list[int]) -> None:
    codes.append(runner.run())


def _stop_and_wait(runner: ChannelRunner, thread: threading.Thread, timeout: float) -> None:
    """A side channel stopped first at shutdown, and waited for: its turns end before the model client closes."""
    runner.stop(timeout)
    thread.join(timeout)
