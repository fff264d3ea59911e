"""How channels/run.py starts Telegram (the registry's "telegram", conversation/routes.py)."""

from __future__ import annotations

from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.channels.telegram.bot import TelegramService
from messaging_llm_bot.conversation.runtime import Runtime


def runner(runtime: Runtime, options: RunOptions) -> ChannelRunner:
    return TelegramService(runtime, stop_signals=options.stop_signals, manage_runtime=options.manage_runtime)
