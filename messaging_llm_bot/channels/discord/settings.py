"""The ``discord`` config section as the channel uses it, and its conversation ids.

Pure functions only: no network, no files (the token's environment variable is read here, once per load or
``/reload``). A conversation is a Discord channel: ``dc:<channel id>``; a thread is a channel of its own in
Discord, so a thread is its own conversation without a mark.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from assistant_framework.config.settings import Settings

PREFIX = "dc:"


def conversation_of(channel: str) -> str:
    """A DM's, channel's or thread's conversation (``dc:80351110224678912``)."""
    return f"{PREFIX}{channel}"


def channel_of(conversation_id: str) -> str:
    return conversation_id.removeprefix(PREFIX)


@dataclass(frozen=True)
class DiscordConfig:
    """What the channel uses of the ``discord`` record, defaults applied."""

    bot_token: str = field(repr=False)
    allowed: tuple[str, ...]
    owner: str | None  # default: the first allowed
    base_url: str
    stream: bool
    edit_interval: float  # seconds between two edits of a growing answer
    problem: str = ""  # why it cannot run (no token), else ""

    @classmethod
    def from_settings(cls, settings: Settings) -> DiscordConfig:
        dc = settings.discord
        token = os.environ.get(dc.bot_token_env, "") if dc.bot_token_env else dc.bot_token
        problem = ""
        if not token:
            problem = (
                f"discord.bot_token_env names {dc.bot_token_env}, which is not set"
                if dc.bot_token_env
                else "discord: no bot_token_env or bot_token"
            )
        return cls(
            bot_token=token,
            allowed=dc.allowed,
            owner=dc.owner or (dc.allowed[0] if dc.allowed else None),
            base_url=dc.base_url.rstrip("/"),
            stream=dc.stream,
            edit_interval=dc.edit_interval_seconds,
            problem=problem,
        )

    def allows(self, user: str) -> bool:
        """Deny by default: only the user ids in ``discord.allowed`` (the gateway proves who wrote)."""
        return user in self.allowed

    def is_owner(self, user: str) -> bool:
        return self.owner is not None and user == self.owner and self.allows(user)
