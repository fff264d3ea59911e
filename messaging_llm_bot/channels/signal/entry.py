"""How channels/run.py starts Signal (the registry's "signal", conversation/routes.py)."""

from __future__ import annotations

from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.channels.signal.service import SignalService
from messaging_llm_bot.conversation.runtime import Runtime


def runner(runtime: Runtime, options: RunOptions) -> ChannelRunner:
    return SignalService(runtime, stop_signals=options.stop_signals, manage_runtime=options.manage_runtime)
