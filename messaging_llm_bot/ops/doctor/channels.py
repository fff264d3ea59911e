"""The doctor's line on the chat channels: which ones the config turns on (the registry's, conversation/routes.py),
or that none is, so only the terminal chat works. Each channel's own checks are in its folder
(``ops/channels/<name>/doctor.py``, found by ``ops.channels.doctor.channel_checks``)."""

from __future__ import annotations

from assistant_framework.hints import CLI
from messaging_llm_bot.conversation.routes import configured_channels
from messaging_llm_bot.ops.channels.doctor import OK, WARN, Check, Context


def check_chat_channels(ctx: Context) -> list[Check]:
    configured = configured_channels(ctx.settings)
    if configured:
        return [Check("chat channels", OK, ", ".join(configured))]
    return [
        Check(
            "chat channels",
            WARN,
            "none is configured, so only the terminal chat (`make chat`) works",
            f"run `{CLI} setup`, or turn a channel on (docs/channels.md)",
        )
    ]
