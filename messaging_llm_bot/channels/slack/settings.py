"""The ``slack`` section's secrets as the channel uses them, and its conversation ids (the rest of the section
the channel reads from its record, ``SlackSettings``).

Pure functions only: no network, no files (the token's and the signing secret's environment variables are read
here, once per load or ``/reload``). A DM or channel is ``sl:<channel id>``; a thread in it is
``sl:<channel id>|<thread_ts>`` (conversation/routes.py's thread mark), its own conversation.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from assistant_framework.config.settings import SlackSettings

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
class SlackSecrets:
    """The tokens and the signing secret the ``slack`` record names, read from their environment variables once
    per load or ``/reload``, and why the channel cannot run (one missing), else ``""``."""

    bot_token: str = field(repr=False)
    signing_secret: str = field(repr=False)
    app_token: str = field(repr=False)  # Socket Mode's app-level token (xapp-...), else ""
    problem: str = ""

    @classmethod
    def of(cls, sl: SlackSettings, environ: Mapping[str, str] = os.environ) -> SlackSecrets:
        token = environ.get(sl.bot_token_env, "") if sl.bot_token_env else sl.bot_token
        secret = environ.get(sl.signing_secret_env, "") if sl.signing_secret_env else ""
        app_token = environ.get(sl.app_token_env, "") if sl.app_token_env else ""
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
        return cls(bot_token=token, signing_secret=secret, app_token=app_token, problem="; ".join(problems))


def api_url(sl: SlackSettings) -> str:
    """``slack.base_url`` ending in ``/``, as slack-sdk joins a method's name to it."""
    return sl.base_url if sl.base_url.endswith("/") else sl.base_url + "/"


def app_token_problems(variable: str, token: str) -> list[str]:
    """Why Socket Mode cannot connect with the app-level token in ``variable`` (``token``), or nothing."""
    if not variable:
        return ["slack.socket_mode is on but slack.app_token_env is not set (the app-level token, xapp-...)"]
    if not token:
        return [f"slack.app_token_env names {variable}, which is not set"]
    if not token.startswith("xapp-"):
        return [f"the variable {variable} (slack.app_token_env) holds no app-level token: it starts with xapp-"]
    return []
