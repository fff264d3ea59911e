"""How channels/run.py starts Discord (the registry's "discord", conversation/routes.py)."""

from __future__ import annotations

from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.channels.discord.service import DiscordService
from messaging_llm_bot.conversation.runtime import Runtime


def runner(runtime: Runtime, options: RunOptions) -> ChannelRunner:
    return DiscordService(runtime, stop_signals=options.stop_signals, manage_runtime=options.manage_runtime)
