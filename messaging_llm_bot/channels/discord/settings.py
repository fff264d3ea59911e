"""The ``discord`` section's token as the channel uses it, and its conversation ids (the rest of the section the
channel reads from its record, ``DiscordSettings``).

Pure functions only: no network, no files (the token's environment variable is read here, once per load or
``/reload``). A conversation is a Discord channel: ``dc:<channel id>``; a thread is a channel of its own in
Discord, so a thread is its own conversation without a mark.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from assistant_framework.config.settings import DiscordSettings

PREFIX = "dc:"


def conversation_of(channel: str) -> str:
    """A DM's, channel's or thread's conversation (``dc:80351110224678912``)."""
    return f"{PREFIX}{channel}"


def channel_of(conversation_id: str) -> str:
    return conversation_id.removeprefix(PREFIX)


@dataclass(frozen=True)
class DiscordToken:
    """The bot token the ``discord`` record names, read from its environment variable once per load or
    ``/reload``, and why the channel cannot run (no token), else ``""``."""

    bot_token: str = field(repr=False)
    problem: str = ""

    @classmethod
    def of(cls, dc: DiscordSettings, environ: Mapping[str, str] = os.environ) -> DiscordToken:
        token = environ.get(dc.bot_token_env, "") if dc.bot_token_env else dc.bot_token
        problem = ""
        if not token:
            problem = (
                f"discord.bot_token_env names {dc.bot_token_env}, which is not set"
                if dc.bot_token_env
                else "discord: no bot_token_env or bot_token"
            )
        return cls(bot_token=token, problem=problem)


def api_url(dc: DiscordSettings) -> str:
    """``discord.base_url`` without a trailing ``/``: the REST API's paths follow it."""
    return dc.base_url.rstrip("/")
