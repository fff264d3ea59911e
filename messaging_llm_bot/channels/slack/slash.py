"""The bot's commands (conversation/commands.py's ``COMMANDS``) as Slack slash commands: Slack's clients keep a
typed ``/command`` to themselves and send it to the app only when the app registered it (Slash Commands in the
app's settings, or ``features.slash_commands`` in its manifest: ``manifest_commands``, made from ``COMMANDS``).

Slack sends a command as a ``slash_commands`` request: over HTTP a form-encoded POST to the command's Request URL
(the same address as the events, signed the same way: webhook.py checks it first), over Socket Mode an envelope
of that type (socketmode.py); either must be acknowledged within three seconds. Its fields: ``command`` (``/new``),
``text`` (what followed it), ``user_id``, ``channel_id``, ``channel_name`` (``directmessage`` in a DM),
``response_url``, ``trigger_id``... ``slash_of`` reads what the intake needs; the answer is a message in that
chat (intake.py), not the request's response.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from messaging_llm_bot.channels.slack.message import unescape
from messaging_llm_bot.channels.slack.settings import conversation_of
from messaging_llm_bot.conversation.commands import COMMANDS

#: Slack's bound on a command's name (the slash included).
MAX_NAME_CHARS = 32


@dataclass(frozen=True)
class SlashCommand:
    """A registered command someone typed: ``/name`` and its text, who, and in which channel or DM."""

    command: str
    text: str
    user: str
    channel: str
    direct: bool  # typed in a DM

    @property
    def conversation(self) -> str:
        """The chat it was typed in (Slack sends no thread: a command cannot be typed in one)."""
        return conversation_of(self.channel)

    @property
    def line(self) -> str:
        """The command line the shared command path reads: ``/name text``."""
        return f"{self.command} {self.text}".strip()


def slash_of(fields: Mapping[str, object]) -> SlashCommand | None:
    """The command of a ``slash_commands`` request's fields (the HTTP form's, or Socket Mode's payload), or None
    when it lacks the command, the user or the channel."""
    values = {key: fields.get(key) for key in ("command", "text", "user_id", "channel_id", "channel_name")}
    command, user, channel = values["command"], values["user_id"], values["channel_id"]
    if not isinstance(command, str) or not command.startswith("/") or len(command) > MAX_NAME_CHARS:
        return None
    if not isinstance(user, str) or not user or not isinstance(channel, str) or not channel:
        return None
    text = values["text"] if isinstance(values["text"], str) else ""
    direct = values["channel_name"] == "directmessage" or channel.startswith("D")
    return SlashCommand(command.lower(), unescape(text).strip(), user, channel, direct)


class ManifestCommand(TypedDict):
    """One entry of the app manifest's ``features.slash_commands``."""

    command: str
    description: str
    should_escape: bool
    url: NotRequired[str]


def manifest_commands(request_url: str | None = None) -> list[ManifestCommand]:
    """The commands to register in the app, from ``COMMANDS``; with ``request_url`` (the Events API's, over HTTP)
    each one's Request URL, none over Socket Mode."""
    made: list[ManifestCommand] = []
    for name, description in COMMANDS:
        one: ManifestCommand = {"command": f"/{name}", "description": description, "should_escape": False}
        if request_url:
            one["url"] = request_url
        made.append(one)
    return made


def command_names() -> str:
    """The commands to register, as one line: ``/help, /now, ...``."""
    return ", ".join(one["command"] for one in manifest_commands())


def manifest_text(request_url: str | None = None) -> str:
    """``manifest_commands`` as the JSON of the manifest's ``slash_commands`` list, one command a line."""
    lines = [json.dumps(one, ensure_ascii=False) for one in manifest_commands(request_url)]
    return "[\n  " + ",\n  ".join(lines) + "\n]"
