"""How channels/run.py starts WhatsApp (the registry's "whatsapp", conversation/routes.py)."""

from __future__ import annotations

from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.channels.whatsapp.service import WhatsAppService
from messaging_llm_bot.conversation.runtime import Runtime


def runner(runtime: Runtime, options: RunOptions) -> ChannelRunner:
    return WhatsAppService(runtime, stop_signals=options.stop_signals, manage_runtime=options.manage_runtime)
