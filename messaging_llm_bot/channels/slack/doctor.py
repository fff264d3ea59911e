"""The doctor's Slack checks, when ``slack.enabled``: the secrets are there, the bot token works (one
``auth.test``), the allowlist is set, and how events come in: over Socket Mode the app-level token opens a
connection (``apps.connections.open``), else the running bot's request URL answers a signed
``url_verification`` on this machine."""

from __future__ import annotations

import httpx

from assistant_framework.hints import CLI
from messaging_llm_bot.channels.doctor import FAIL, OK, WARN, Check, Context
from messaging_llm_bot.channels.slack.settings import SlackConfig

DOCS = "docs/slack.md"


def checks(ctx: Context) -> list[Check]:
    settings = ctx.settings
    if not settings.slack.enabled:
        return []
    config = SlackConfig.from_settings(settings)
    lines = [_allowlist(config)]
    try:
        import slack_sdk  # noqa: F401 - the slack extra
    except ImportError:
        lines.append(Check("slack sdk", FAIL, "slack-sdk is not installed", "pip install -e '.[slack]'"))
        return lines
    if config.problem:
        lines.append(Check("slack secrets", FAIL, config.problem, f"set them as {DOCS} says"))
        return lines
    lines.append(_token(config))
    lines.append(_app_token(config) if config.socket_mode else _request_url(config))
    return lines


def _allowlist(config: SlackConfig) -> Check:
    if not config.allowed:
        return Check(
            "slack allowlist",
            FAIL,
            "slack.allowed is empty: the assistant answers no one",
            f"`{CLI} config set slack.allowed '[\"U024BE7LH\"]'` (your member id)",
        )
    return Check("slack allowlist", OK, f"{len(config.allowed)} allowed; owner {config.owner}")


def _token(config: SlackConfig) -> Check:
    from messaging_llm_bot.channels.slack.probe import probe_token

    reached = probe_token(config.base_url, config.bot_token)
    if reached.problem:
        return Check("slack token", FAIL, reached.problem, f"copy the bot token (xoxb-) again ({DOCS})")
    return Check("slack token", OK, f"the token is the bot {reached.bot} in {reached.team}")


def _app_token(config: SlackConfig) -> Check:
    from messaging_llm_bot.channels.slack.probe import probe_app_token

    problem = probe_app_token(config.base_url, config.app_token)
    if problem:
        return Check(
            "slack app token", FAIL, problem, f"copy the app-level token (xapp-, connections:write) again ({DOCS})"
        )
    return Check("slack app token", OK, "the app-level token opens a Socket Mode connection")


def _request_url(config: SlackConfig) -> Check:
    from messaging_llm_bot.channels.slack.probe import verify_url

    host = "127.0.0.1" if config.listen in ("0.0.0.0", "") else "::1" if config.listen == "::" else config.listen
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{config.port}{config.path}"
    try:
        status, answered = verify_url(url, config.signing_secret)
    except httpx.HTTPError:
        return Check(
            "slack request url",
            WARN,
            f"nothing answers at {url}: the bot is not running (Slack retries an event three times, then drops it)",
            f"start it (`make run`), then point your HTTPS proxy at {url} ({DOCS})",
        )
    if answered:
        return Check("slack request url", OK, f"the running bot answers Slack's signed challenge at {url}")
    return Check(
        "slack request url",
        FAIL,
        f"{url} answered {status} to a signed challenge: another program, or another signing secret",
        f"stop what listens on port {config.port}, or set slack.webhook.port ({DOCS})",
    )
