"""The doctor's WhatsApp checks, when ``whatsapp.enabled``: the secrets are there, the access token reaches the
phone number (one Graph API call), the webhook answers the handshake on this machine (the running bot's), the
allowlist is set, and a template is set for messages outside the 24-hour window."""

from __future__ import annotations

import secrets

import httpx

from assistant_framework.hints import CLI
from messaging_llm_bot.channels.doctor import FAIL, OK, WARN, Check, Context
from messaging_llm_bot.channels.whatsapp.probe import probe_number
from messaging_llm_bot.channels.whatsapp.settings import WhatsAppConfig

DOCS = "docs/whatsapp.md"
TIMEOUT_SECONDS = 10.0  # the handshake on this machine


def checks(ctx: Context) -> list[Check]:
    settings = ctx.settings
    if not settings.whatsapp.enabled:
        return []
    config = WhatsAppConfig.from_settings(settings)
    lines = [_allowlist(config)]
    if config.problem:
        lines.append(Check("whatsapp secrets", FAIL, config.problem, f"set them as {DOCS} says"))
        return lines
    lines.append(_token(config))
    lines.append(_webhook(config))
    if config.template:
        lines.append(Check("whatsapp template", OK, f"outside the 24-hour window: {config.template}"))
    else:
        lines.append(
            Check(
                "whatsapp template",
                WARN,
                "no whatsapp.template: job runs, reminders and notices more than 24 hours after your last message "
                "wait until you write again",
                f"`{CLI} config set whatsapp.template.name NAME` with an approved template ({DOCS}#the-24-hour-window)",
            )
        )
    return lines


def _allowlist(config: WhatsAppConfig) -> Check:
    if not config.allowed:
        return Check(
            "whatsapp allowlist",
            FAIL,
            "whatsapp.allowed is empty: the assistant answers no one",
            f"`{CLI} config set whatsapp.allowed '[\"+491701234567\"]'`",
        )
    return Check("whatsapp allowlist", OK, f"{len(config.allowed)} allowed; owner +{config.owner}")


def _token(config: WhatsAppConfig) -> Check:
    reached = probe_number(config.base_url, config.phone_number_id, config.access_token)
    if reached.problem:
        fix = "make a new system user token" if reached.code == 190 else "check whatsapp.phone_number_id and base_url"
        return Check("whatsapp token", FAIL, reached.problem, f"{fix} ({DOCS})")
    return Check("whatsapp token", OK, f"the token reaches the number {reached.number} (id {config.phone_number_id})")


def _webhook(config: WhatsAppConfig) -> Check:
    host = "127.0.0.1" if config.listen in ("0.0.0.0", "") else "::1" if config.listen == "::" else config.listen
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{config.port}{config.path}"
    challenge = secrets.token_hex(8)
    params = {"hub.mode": "subscribe", "hub.verify_token": config.verify_token, "hub.challenge": challenge}
    try:
        response = httpx.get(url, params=params, timeout=TIMEOUT_SECONDS)
    except httpx.HTTPError:
        return Check(
            "whatsapp webhook",
            WARN,
            f"nothing answers at {url}: the bot is not running (Meta's messages wait and are sent again)",
            f"start it (`make run`), then point your HTTPS proxy at {url} ({DOCS})",
        )
    if response.status_code == 200 and response.text == challenge:
        return Check("whatsapp webhook", OK, f"the running bot's webhook answers the handshake at {url}")
    return Check(
        "whatsapp webhook",
        FAIL,
        f"{url} answered {response.status_code} to the handshake: another program, or another verify token",
        f"stop what listens on port {config.port}, or set whatsapp.webhook.port ({DOCS})",
    )
