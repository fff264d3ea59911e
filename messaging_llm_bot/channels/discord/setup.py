"""Discord's part of ``assistant setup`` (``--discord USER_ID``, docs/discord.md; channels/setup.py): the
environment variable holding the bot token (never written) and the owner's user id. The token is tried when its
variable is set (channels/discord/probe.py); the settings are written with ``discord.enabled`` last."""

from __future__ import annotations

import os
import re

from assistant_framework.json_types import JsonObject
from messaging_llm_bot.channels.setup import ChannelSetup, Flags, SetupError, Steps

TOKEN_ENV = "DISCORD_BOT_TOKEN"
USER_ID = re.compile(r"[0-9]{17,20}")
DEFAULT_BASE_URL = "https://discord.com/api/v10"


def add_arguments(parser: Flags) -> None:
    parser.add_argument(
        "--discord",
        dest="discord_owner",
        metavar="USER_ID",
        help="your Discord user id, 80351110224678912: the Discord channel answers it (docs/discord.md)",
    )
    parser.add_argument("--discord-token-env", metavar="NAME", help=f"the variable holding the bot token ({TOKEN_ENV})")
    parser.add_argument("--discord-base-url", metavar="URL", help=f"the REST API (default {DEFAULT_BASE_URL})")


def steps(setup: ChannelSetup) -> None:
    if DiscordSteps(setup).discord(setup.configured.get("discord") or {}):
        setup.reached.append("Discord")


class DiscordSteps(Steps):
    def discord(self, configured: JsonObject) -> bool:
        """Set up Discord when ``--discord USER_ID`` is given (the rest is asked, or taken from the flags); True
        when it was set up. Without the flag nothing is asked about Discord."""
        a = self.a
        owner = a.discord_owner
        if not owner:
            return False
        if not USER_ID.fullmatch(owner):
            raise SetupError(
                f"{owner!r} is not a Discord user id (80351110224678912: Developer Mode on, then Copy User ID)"
            )
        base_url = a.discord_base_url or configured.get("base_url") or DEFAULT_BASE_URL
        token_env = a.discord_token_env or self._ask("The variable holding the bot token", TOKEN_ENV)
        self._try_token(base_url, token_env)
        self.settings += [
            ("discord.bot_token_env", token_env),
            ("discord.allowed", [owner]),
            *([("discord.base_url", base_url)] if base_url != DEFAULT_BASE_URL else []),
            ("discord.enabled", True),
        ]
        self.io.say(
            "Discord: invite the bot to your server (OAuth2, URL Generator, scope bot) or write to it in a DM; "
            "in a server it answers messages that mention it (docs/discord.md)."
        )
        return True

    def _try_token(self, base_url: str, env: str) -> None:
        token = os.environ.get(env, "")
        if not token:
            self.io.say(f"Discord: set {env} to the bot token before `make run`; `make doctor` then tries it.")
            return
        from messaging_llm_bot.channels.discord.probe import probe_token

        reached = probe_token(base_url, token)
        if reached.problem:
            raise SetupError(f"{reached.problem}; check the bot token in {env}")
        self.io.say(f"Discord: the token in {env} is the bot {reached.bot}.")
        if not reached.message_content:
            self.io.say("Discord: turn on Message Content Intent on the application's Bot page, or it cannot connect.")
