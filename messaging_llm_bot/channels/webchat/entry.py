"""How channels/run.py starts the web chat (the registry's "webchat", conversation/routes.py), and its routes
on the bot's web page (``web_mount``: ``assistant run`` mounts them when the channel is configured)."""

from __future__ import annotations

from assistant_framework.web.server import Mount
from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.channels.webchat.page import chat_mount
from messaging_llm_bot.channels.webchat.service import WebChatService
from messaging_llm_bot.conversation.runtime import Runtime


def runner(runtime: Runtime, options: RunOptions) -> ChannelRunner:
    return WebChatService(runtime, stop_signals=options.stop_signals, manage_runtime=options.manage_runtime)


def web_mount(runtime: Runtime) -> Mount:
    return chat_mount(runtime)
