"""The doctor's Discord checks, when ``discord.enabled``: the allowlist is set, discord.py is installed, the bot
token works (``GET /users/@me``) and its application has the message content intent on."""

from __future__ import annotations

from assistant_framework.hints import CLI
from messaging_llm_bot.channels.discord.settings import DiscordConfig
from messaging_llm_bot.channels.doctor import FAIL, OK, Check, Context

DOCS = "docs/discord.md"


def checks(ctx: Context) -> list[Check]:
    settings = ctx.settings
    if not settings.discord.enabled:
        return []
    config = DiscordConfig.from_settings(settings)
    lines = [_allowlist(config)]
    try:
        import discord  # noqa: F401 - the discord extra
    except ImportError:
        lines.append(Check("discord library", FAIL, "discord.py is not installed", "pip install -e '.[discord]'"))
        return lines
    if config.problem:
        lines.append(Check("discord token", FAIL, config.problem, f"set it as {DOCS} says"))
        return lines
    return [*lines, *_token(config)]


def _allowlist(config: DiscordConfig) -> Check:
    if not config.allowed:
        return Check(
            "discord allowlist",
            FAIL,
            "discord.allowed is empty: the assistant answers no one",
            f"`{CLI} config set discord.allowed '[\"80351110224678912\"]'` (your user id)",
        )
    return Check("discord allowlist", OK, f"{len(config.allowed)} allowed; owner {config.owner}")


def _token(config: DiscordConfig) -> list[Check]:
    from messaging_llm_bot.channels.discord.probe import probe_token

    reached = probe_token(config.base_url, config.bot_token)
    if reached.problem:
        return [Check("discord token", FAIL, reached.problem, f"copy the token again from the Bot page ({DOCS})")]
    token = Check("discord token", OK, f"the token is the bot {reached.bot}")
    if reached.message_content:
        return [token, Check("discord intent", OK, "the message content intent is on")]
    intent = Check(
        "discord intent",
        FAIL,
        "the application's message content intent is off: Discord refuses the bot's connection",
        f"turn on Message Content Intent on the application's Bot page ({DOCS})",
    )
    return [token, intent]
