"""The ``whatsapp`` section's secrets as the channel uses them, and its conversation ids (the rest of the
section the channel reads from its record, ``WhatsAppSettings``).

Pure functions only: no network, no files (the token's and the app secret's environment variables are read
here, once per load or ``/reload``). A number is kept as WhatsApp's ``wa_id``: the E.164 digits without ``+``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from assistant_framework.config.settings import WhatsAppSettings
from assistant_framework.config.settings.whatsapp import wa_id

PREFIX = "wa:"


def conversation_of(number: str) -> str:
    """A number's conversation: ``wa:491701234567``."""
    return f"{PREFIX}{wa_id(number)}"


def number_of(conversation_id: str) -> str:
    """The ``wa_id`` of a conversation made by ``conversation_of``."""
    return conversation_id.removeprefix(PREFIX)


@dataclass(frozen=True)
class WhatsAppSecrets:
    """The secrets the ``whatsapp`` record names, read from their environment variables once per load or
    ``/reload``, and why the channel cannot run (a secret missing), else ``""``."""

    access_token: str = field(repr=False)
    app_secret: str = field(repr=False)
    problem: str = ""

    @classmethod
    def of(cls, wa: WhatsAppSettings, environ: Mapping[str, str] = os.environ) -> WhatsAppSecrets:
        token = environ.get(wa.access_token_env, "") if wa.access_token_env else wa.access_token
        secret = environ.get(wa.app_secret_env, "") if wa.app_secret_env else ""
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
        return cls(access_token=token, app_secret=secret, problem="; ".join(problems))
