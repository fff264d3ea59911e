"""The bot on the framework: the agent loop (agent), the model client (llm), the JSON skill protocol (protocol),
the chat channels (channels) and what they share (conversation), the operator CLI (cli), setup and doctor (ops)
and the served endpoints (serve); ``runtime`` and ``parts`` build it from the config.

Importing it hands the channels' own config sections to the config layer (channels/sections.py): wherever the bot
loads or checks a config, a channel's section is known, checked and read into its record."""

from collections.abc import Mapping

from assistant_framework.config.sections import declare
from assistant_framework.config.settings.fields import Record


def _channel_sections() -> Mapping[str, type[Record]]:
    from messaging_llm_bot.channels.sections import channel_sections

    return channel_sections()


declare(_channel_sections)
