"""The doctor's WhatsApp checks, when ``whatsapp.enabled``: the secrets are there, the access token reaches the
phone number (one Graph API call), the webhook answers the handshake on this machine (the running bot's), the
allowlist is set, and a template is set for messages outside the 24-hour window."""

from __future__ import annotations

from assistant_framework.config.settings import WhatsAppSettings
from assistant_framework.hints import CLI
from messaging_llm_bot.channels.whatsapp.settings import WhatsAppSecrets
from messaging_llm_bot.ops.channels.doctor import (
    FAIL,
    OK,
    WARN,
    Check,
    Context,
    Handshake,
    allowed_check,
    local_url,
    verdict,
)
from messaging_llm_bot.ops.channels.whatsapp.probe import probe_number, verify_webhook

DOCS = "docs/whatsapp.md"
WEBHOOK = Handshake(
    "whatsapp webhook",
    "the handshake",
    "the running bot's webhook answers the handshake",
    "Meta's messages wait and are sent again",
    "another verify token",
    "whatsapp.webhook.port",
    DOCS,
)


def checks(ctx: Context) -> list[Check]:
    settings = ctx.settings
    if not settings.whatsapp.enabled:
        return []
    config = settings.whatsapp
    secrets = WhatsAppSecrets.of(config)
    lines = [allowed_check("whatsapp.allowed", "+491701234567", config.allowed, f"+{config.owner_id}")]
    if secrets.problem:
        return [*lines, Check("whatsapp secrets", FAIL, secrets.problem, f"set them as {DOCS} says")]
    hook = config.webhook
    lines += [
        _token(config, secrets.access_token),
        WEBHOOK.check(
            local_url(hook.listen, hook.port, hook.path),
            hook.port,
            lambda url: verify_webhook(url, config.verify_token),
        ),
    ]
    if config.template.name:
        return [*lines, Check("whatsapp template", OK, f"outside the 24-hour window: {config.template.name}")]
    return [
        *lines,
        Check(
            "whatsapp template",
            WARN,
            "no whatsapp.template: job runs, reminders and notices more than 24 hours after your last message "
            "wait until you write again",
            f"`{CLI} config set whatsapp.template.name NAME` with an approved template ({DOCS}#the-24-hour-window)",
        ),
    ]


def _token(config: WhatsAppSettings, access_token: str) -> Check:
    reached = probe_number(config.base_url, config.phone_number_id, access_token)
    fix = "make a new system user token" if reached.code == 190 else "check whatsapp.phone_number_id and base_url"
    ok = f"the token reaches the number {reached.number} (id {config.phone_number_id})"
    return verdict("whatsapp token", reached.problem, ok, f"{fix} ({DOCS})")
