"""How channels/run.py starts the web chat (the registry's "webchat", conversation/routes.py)."""

from __future__ import annotations

from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.channels.webchat.service import WebChatService
from messaging_llm_bot.conversation.runtime import Runtime


def runner(runtime: Runtime, options: RunOptions) -> ChannelRunner:
    return WebChatService(runtime, stop_signals=options.stop_signals, manage_runtime=options.manage_runtime)
