"""The doctor's Slack checks, when ``slack.enabled``: the secrets are there, the bot token works (one
``auth.test``), the allowlist is set, and how events come in: over Socket Mode the app-level token opens a
connection (``apps.connections.open``), else the running bot's request URL answers a signed
``url_verification`` on this machine; and the slash commands to register in the app (not checked: Slack does not
tell a bot)."""

from __future__ import annotations

from assistant_framework.config.settings import SlackSettings
from assistant_framework.hints import CLI
from messaging_llm_bot.channels.slack.settings import SlackSecrets, api_url
from messaging_llm_bot.channels.slack.slash import command_names
from messaging_llm_bot.ops.channels.doctor import (
    FAIL,
    SKIP,
    Check,
    Context,
    Handshake,
    allowed_check,
    library_missing,
    local_url,
    verdict,
)

DOCS = "docs/slack.md"
REQUEST_URL = Handshake(
    "slack request url",
    "a signed challenge",
    "the running bot answers Slack's signed challenge",
    "Slack retries an event three times, then drops it",
    "another signing secret",
    "slack.webhook.port",
    DOCS,
)


def checks(ctx: Context) -> list[Check]:
    settings = ctx.settings
    if not settings.slack.enabled:
        return []
    config = settings.slack
    secrets = SlackSecrets.of(config)
    lines = [allowed_check("slack.allowed", "U024BE7LH", config.allowed, config.owner_id, note="(your member id)")]
    missing = library_missing("slack sdk", "slack_sdk", "slack-sdk", "slack")
    if missing:
        return [*lines, missing]
    if secrets.problem:
        return [*lines, Check("slack secrets", FAIL, secrets.problem, f"set them as {DOCS} says")]
    events = _app_token(config, secrets) if config.socket_mode else _request_url(config, secrets)
    return [*lines, _token(config, secrets), events, _commands(config)]


def _commands(config: SlackSettings) -> Check:
    """The slash commands to register: not checked (Slack does not tell a bot which the app registered)."""
    where = "" if config.socket_mode else ", each with the request URL"
    return Check(
        "slack commands",
        SKIP,
        f"not checked (Slack does not tell the bot): register in the app, Slash Commands{where}: {command_names()}",
        f"`{CLI} setup --slack-owner ...` prints them as the manifest's features.slash_commands ({DOCS})",
    )


def _token(config: SlackSettings, secrets: SlackSecrets) -> Check:
    from messaging_llm_bot.ops.channels.slack.probe import probe_token

    reached = probe_token(api_url(config), secrets.bot_token)
    ok = f"the token is the bot {reached.bot} in {reached.team}"
    return verdict("slack token", reached.problem, ok, f"copy the bot token (xoxb-) again ({DOCS})")


def _app_token(config: SlackSettings, secrets: SlackSecrets) -> Check:
    from messaging_llm_bot.ops.channels.slack.probe import probe_app_token

    return verdict(
        "slack app token",
        probe_app_token(api_url(config), secrets.app_token),
        "the app-level token opens a Socket Mode connection",
        f"copy the app-level token (xapp-, connections:write) again ({DOCS})",
    )


def _request_url(config: SlackSettings, secrets: SlackSecrets) -> Check:
    from messaging_llm_bot.ops.channels.slack.probe import verify_url

    hook = config.webhook
    url = local_url(hook.listen, hook.port, hook.path)
    return REQUEST_URL.check(url, hook.port, lambda url: verify_url(url, secrets.signing_secret))
