"""How channels/run.py starts Slack (the registry's "slack", conversation/routes.py)."""

from __future__ import annotations

from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.channels.slack.service import SlackService
from messaging_llm_bot.conversation.runtime import Runtime


def runner(runtime: Runtime, options: RunOptions) -> ChannelRunner:
    return SlackService(runtime, stop_signals=options.stop_signals, manage_runtime=options.manage_runtime)
