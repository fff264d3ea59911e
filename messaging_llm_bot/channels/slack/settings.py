"""The ``slack`` config section as the channel uses it, and its conversation ids.

Pure functions only: no network, no files (the token's and the signing secret's environment variables are read
here, once per load or ``/reload``). A DM or channel is ``sl:<channel id>``; a thread in it is
``sl:<channel id>|<thread_ts>`` (conversation/routes.py's thread mark), its own conversation.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from assistant_framework.config.settings import Settings

PREFIX = "sl:"
THREAD_MARK = "|"


def conversation_of(channel: str, thread_ts: str | None = None) -> str:
    """A channel's conversation (``sl:D0123``), or a thread's in it (``sl:C0123|1712345678.000100``)."""
    return f"{PREFIX}{channel}{THREAD_MARK}{thread_ts}" if thread_ts else f"{PREFIX}{channel}"


def place_of(conversation_id: str) -> tuple[str, str | None]:
    """The channel id and the thread's ts (or None) of a conversation made by ``conversation_of``."""
    channel, _, thread = conversation_id.removeprefix(PREFIX).partition(THREAD_MARK)
    return channel, thread or None


@dataclass(frozen=True)
class SlackConfig:
    """What the channel uses of the ``slack`` record, defaults applied."""

    bot_token: str = field(repr=False)
    signing_secret: str = field(repr=False)
    app_token: str = field(repr=False)  # Socket Mode's app-level token (xapp-...), else ""
    allowed: tuple[str, ...]
    owner: str | None  # default: the first allowed
    listen: str
    port: int
    path: str
    max_body_bytes: int
    per_minute: int
    base_url: str
    stream: bool
    socket_mode: bool
    edit_interval: float  # seconds between two edits of a growing answer
    problem: str = ""  # why it cannot run (a secret's variable unset), else ""

    @classmethod
    def from_settings(cls, settings: Settings) -> SlackConfig:
        sl = settings.slack
        token = os.environ.get(sl.bot_token_env, "") if sl.bot_token_env else sl.bot_token
        secret = os.environ.get(sl.signing_secret_env, "") if sl.signing_secret_env else ""
        app_token = os.environ.get(sl.app_token_env, "") if sl.app_token_env else ""
        problems = []
        if not token:
            problems.append(
                f"slack.bot_token_env names {sl.bot_token_env}, which is not set"
                if sl.bot_token_env
                else "slack: no bot_token_env or bot_token"
            )
        if sl.socket_mode:
            problems += app_token_problems(sl.app_token_env, app_token)
        elif not secret:
            problems.append(
                f"slack.signing_secret_env names {sl.signing_secret_env}, which is not set"
                if sl.signing_secret_env
                else "slack: no signing_secret_env (every request Slack sends is checked with the signing secret)"
            )
        return cls(
            bot_token=token,
            signing_secret=secret,
            app_token=app_token,
            allowed=sl.allowed,
            owner=sl.owner or (sl.allowed[0] if sl.allowed else None),
            listen=sl.webhook.listen,
            port=sl.webhook.port,
            path=sl.webhook.path,
            max_body_bytes=sl.webhook.max_body_bytes,
            per_minute=sl.webhook.per_minute,
            base_url=sl.base_url if sl.base_url.endswith("/") else sl.base_url + "/",
            stream=sl.stream,
            socket_mode=sl.socket_mode,
            edit_interval=sl.edit_interval_seconds,
            problem="; ".join(problems),
        )

    def allows(self, user: str) -> bool:
        """Deny by default: only the users in ``slack.allowed`` (the signed request proves Slack sent it)."""
        return user in self.allowed

    def is_owner(self, user: str) -> bool:
        return self.owner is not None and user == self.owner and self.allows(user)


def app_token_problems(variable: str, token: str) -> list[str]:
    """Why Socket Mode cannot connect with the app-level token in ``variable`` (``token``), or nothing."""
    if not variable:
        return ["slack.socket_mode is on but slack.app_token_env is not set (the app-level token, xapp-...)"]
    if not token:
        return [f"slack.app_token_env names {variable}, which is not set"]
    if not token.startswith("xapp-"):
        return [f"the variable {variable} (slack.app_token_env) holds no app-level token: it starts with xapp-"]
    return []
