"""The doctor's Discord checks, when ``discord.enabled``: the allowlist is set, discord.py is installed, the bot
token works (``GET /users/@me``) and its application has the message content intent on."""

from __future__ import annotations

from assistant_framework.config.settings import DiscordSettings
from messaging_llm_bot.channels.discord.settings import DiscordToken, api_url
from messaging_llm_bot.ops.channels.doctor import FAIL, Check, Context, allowed_check, library_missing, verdict

DOCS = "docs/discord.md"


def checks(ctx: Context) -> list[Check]:
    settings = ctx.settings
    if not settings.discord.enabled:
        return []
    config = settings.discord
    token = DiscordToken.of(config)
    lines = [
        allowed_check("discord.allowed", "80351110224678912", config.allowed, config.owner_id, note="(your user id)")
    ]
    missing = library_missing("discord library", "discord", "discord.py", "discord")
    if missing:
        return [*lines, missing]
    if token.problem:
        return [*lines, Check("discord token", FAIL, token.problem, f"set it as {DOCS} says")]
    return [*lines, *_token(config, token.bot_token)]


def _token(config: DiscordSettings, bot_token: str) -> list[Check]:
    from messaging_llm_bot.ops.channels.discord.probe import probe_token

    reached = probe_token(api_url(config), bot_token)
    token = verdict(
        "discord token",
        reached.problem,
        f"the token is the bot {reached.bot}",
        f"copy the token again from the Bot page ({DOCS})",
    )
    if reached.problem:
        return [token]
    intent = verdict(
        "discord intent",
        ""
        if reached.message_content
        else "the application's message content intent is off: Discord refuses the bot's connection",
        "the message content intent is on",
        f"turn on Message Content Intent on the application's Bot page ({DOCS})",
    )
    return [token, intent]
