"""The ``whatsapp`` config section as the channel uses it, and its conversation ids.

Pure functions only: no network, no files (the token's and the app secret's environment variables are read
here, once per load or ``/reload``). A number is kept as WhatsApp's ``wa_id``: the E.164 digits without ``+``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from assistant_framework.config.settings import Settings

PREFIX = "wa:"


def wa_id(number: str) -> str:
    """``+49 170 1234567`` or ``491701234567`` as WhatsApp's id of it: the digits alone."""
    return "".join(ch for ch in number if ch.isdigit())


def conversation_of(number: str) -> str:
    """A number's conversation: ``wa:491701234567``."""
    return f"{PREFIX}{wa_id(number)}"


def number_of(conversation_id: str) -> str:
    """The ``wa_id`` of a conversation made by ``conversation_of``."""
    return conversation_id.removeprefix(PREFIX)


@dataclass(frozen=True)
class WhatsAppConfig:
    """What the channel uses of the ``whatsapp`` record (and runtime.timezone), defaults applied."""

    phone_number_id: str
    access_token: str = field(repr=False)
    app_secret: str = field(repr=False)
    verify_token: str = field(repr=False)
    allowed: tuple[str, ...]  # wa_ids
    owner: str | None  # wa_id; default: the first allowed
    listen: str
    port: int
    path: str
    max_body_bytes: int
    per_minute: int
    base_url: str
    template: str
    template_language: str
    typing: bool
    morning_digest: str | None
    timezone: str
    problem: str = ""  # why it cannot run (a secret's variable unset), else ""

    @classmethod
    def from_settings(cls, settings: Settings) -> WhatsAppConfig:
        wa = settings.whatsapp
        token = os.environ.get(wa.access_token_env, "") if wa.access_token_env else wa.access_token
        secret = os.environ.get(wa.app_secret_env, "") if wa.app_secret_env else ""
        problems = []
        if not token:
            problems.append(
                f"whatsapp.access_token_env names {wa.access_token_env}, which is not set"
                if wa.access_token_env
                else "whatsapp: no access_token_env or access_token"
            )
        if not secret:
            problems.append(
                f"whatsapp.app_secret_env names {wa.app_secret_env}, which is not set"
                if wa.app_secret_env
                else "whatsapp: no app_secret_env (every webhook POST is checked with the app secret)"
            )
        if not wa.verify_token:
            problems.append("whatsapp: no verify_token (the webhook's handshake needs it)")
        allowed = tuple(wa_id(n) for n in wa.allowed)
        return cls(
            phone_number_id=wa.phone_number_id,
            access_token=token,
            app_secret=secret,
            verify_token=wa.verify_token,
            allowed=allowed,
            owner=wa_id(wa.owner) if wa.owner else (allowed[0] if allowed else None),
            listen=wa.webhook.listen,
            port=wa.webhook.port,
            path=wa.webhook.path,
            max_body_bytes=wa.webhook.max_body_bytes,
            per_minute=wa.webhook.per_minute,
            base_url=wa.base_url.rstrip("/"),
            template=wa.template.name,
            template_language=wa.template.language,
            typing=wa.typing,
            morning_digest=wa.morning_digest or None,
            timezone=settings.runtime.timezone,
            problem="; ".join(problems),
        )

    def allows(self, number: str) -> bool:
        """Deny by default: only the numbers in ``whatsapp.allowed`` (the signed webhook proves the sender)."""
        return number in self.allowed

    def is_owner(self, number: str) -> bool:
        return self.owner is not None and number == self.owner and self.allows(number)
