"""Run every enabled chat frontend in one process: one workspace, memory and skill set, separate chats.

Telegram keeps the main thread (its library wants the main thread's signals); Signal then runs in a
thread of its own with its own event loop. Whoever shuts the runtime down stops Signal first
(``BotRuntime.on_shutdown``), so no turn uses the model client after it is closed.
"""

from __future__ import annotations

import signal
import threading

from assistant_framework.config.settings import Settings
from messaging_llm_bot.conversation.routes import configured_channels
from messaging_llm_bot.conversation.runtime import Runtime


def enabled_frontends(settings: Settings) -> list[str]:
    """Chat channels the config turns on (conversation/routes.py): telegram when it has a token, signal when
    ``signal.enabled``."""
    return configured_channels(settings)


def run_chat_frontends(runtime: Runtime, names: list[str]) -> int:
    """Run ``names`` until stopped (SIGINT/SIGTERM); returns the worst exit code."""
    # Imported here: a Telegram-only start does not load the Signal frontend, and the reverse.
    if names == ["signal"]:
        from messaging_llm_bot.channels.signal.service import run_signal

        return run_signal(runtime)
    from messaging_llm_bot.channels.telegram.bot import run_telegram

    if "signal" not in names:
        return run_telegram(runtime)
    from messaging_llm_bot.channels.signal.service import SignalService

    timeout = runtime.settings.runtime.shutdown_timeout_seconds
    service = SignalService(runtime, manage_runtime=False)
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(service.run()), name="signal-frontend", daemon=True)
    runtime.on_shutdown(lambda t: service.stop(t))
    thread.start()
    code = run_telegram(runtime, (signal.SIGINT, signal.SIGTERM))
    if not service.stopped.is_set():  # Telegram ended before it shut the runtime down (e.g. a bad token)
        service.stop(timeout)
        runtime.shutdown(timeout)
    thread.join(5)
    return max([code, *codes])
