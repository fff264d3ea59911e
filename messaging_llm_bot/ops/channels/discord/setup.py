"""Discord's part of ``assistant setup`` (``--discord USER_ID``, docs/discord.md; ops/channels/setup.py): the
environment variable holding the bot token (never written) and the owner's user id (``--discord find``: read from
their first DM to the bot, through the gateway). The token is tried when its variable is set
(ops/channels/discord/probe.py); the settings are written with ``discord.enabled`` last."""

from __future__ import annotations

import importlib.util
import re

from messaging_llm_bot.ops.channels.setup import FirstSender, Flags, Form, OptInSteps, SetupError, Tried

TOKEN_ENV = "DISCORD_BOT_TOKEN"
DEFAULT_BASE_URL = "https://discord.com/api/v10"


class DiscordSteps(OptInSteps):
    label, section, account = "Discord", "discord", "discord_owner"
    form = Form(
        re.compile(r"[0-9]{17,20}"),
        "is not a Discord user id (80351110224678912: Developer Mode on, then Copy User ID)",
    )
    finds_owner = True

    def set_up(self, account: str) -> None:
        base_url = self.a.discord_base_url or self.configured.get("base_url") or DEFAULT_BASE_URL
        token_env = self.a.discord_token_env or self._ask("The variable holding the bot token", TOKEN_ENV)
        self.try_secret(token_env, "the bot token", lambda token: _tried(base_url, token, token_env), "the bot token")
        owner = self.owner(account, token_env, lambda token, seconds: _dms(base_url, token, seconds), "--discord")
        self.enable(
            {
                "bot_token_env": token_env,
                "allowed": [owner],
                "base_url": base_url if base_url != DEFAULT_BASE_URL else None,
            }
        )
        self.io.say(
            "Discord: invite the bot to your server (OAuth2, URL Generator, scope bot) or write to it in a DM; "
            "in a server it answers messages that mention it (docs/discord.md)."
        )


def _tried(base_url: str, token: str, env: str) -> Tried:
    from messaging_llm_bot.ops.channels.discord.probe import probe_token

    reached = probe_token(base_url, token)
    intent = "turn on Message Content Intent on the application's Bot page, or it cannot connect."
    return Tried(
        (f"the token in {env} is the bot {reached.bot}.", *(() if reached.message_content else (intent,))),
        reached.problem,
    )


def _dms(base_url: str, token: str, seconds: float) -> list[FirstSender]:
    """Who wrote to the bot in a DM within ``seconds`` (discord.py's gateway: the discord extra)."""
    if importlib.util.find_spec("discord") is None:
        raise SetupError("reading your first DM needs discord.py: pip install -e '.[discord]', or give your id")
    from messaging_llm_bot.ops.channels.discord.probe import dm_senders

    return dm_senders(base_url, token, seconds)


def add_arguments(parser: Flags) -> None:
    DiscordSteps.add_account(
        parser,
        "--discord",
        "USER_ID",
        "your Discord user id, 80351110224678912, or find: read from your first DM to the bot; the Discord channel "
        "answers it (docs/discord.md)",
    )
    parser.add_argument("--discord-token-env", metavar="NAME", help=f"the variable holding the bot token ({TOKEN_ENV})")
    parser.add_argument("--discord-base-url", metavar="URL", help=f"the REST API (default {DEFAULT_BASE_URL})")


steps = DiscordSteps.steps
