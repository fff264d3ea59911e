"""How channels/run.py starts the email channel (the registry's "email", conversation/routes.py)."""

from __future__ import annotations

from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.channels.email.service import EmailService
from messaging_llm_bot.conversation.runtime import Runtime


def runner(runtime: Runtime, options: RunOptions) -> ChannelRunner:
    return EmailService(runtime, stop_signals=options.stop_signals, manage_runtime=options.manage_runtime)
