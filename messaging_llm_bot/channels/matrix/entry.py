"""How channels/run.py starts Matrix (the registry's "matrix", conversation/routes.py)."""

from __future__ import annotations

from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.channels.matrix.service import MatrixService
from messaging_llm_bot.conversation.runtime import Runtime


def runner(runtime: Runtime, options: RunOptions) -> ChannelRunner:
    return MatrixService(runtime, stop_signals=options.stop_signals, manage_runtime=options.manage_runtime)
