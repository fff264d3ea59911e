"""Webhook mode's secret: never run without one, compare it in constant time.

Telegram sends the secret given to ``setWebhook`` in the ``X-Telegram-Bot-Api-Secret-Token``
header of every update; PTB's webhook server answers 403 (and queues nothing) when it is missing
or different. Without a configured ``telegram.webhook.secret_token`` anyone who finds the URL
could post updates as the owner, so one is generated and kept in ``state/webhook_secret``.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from typing import Any

log = logging.getLogger(__name__)

SECRET_FILE = "state/webhook_secret"
#: Telegram accepts 1-256 characters of A-Z, a-z, 0-9, "_" and "-"; token_urlsafe uses exactly those.
_GENERATED_BYTES = 48


class ConstantTimeSecret(str):
    """The secret as a ``str`` whose ``==`` / ``!=`` run ``hmac.compare_digest``.

    PTB's handler checks ``header != secret``; when the right operand's type is a subclass of the
    left's, Python calls the subclass's reflected ``__ne__`` first, so that check is constant-time.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, str):
            return NotImplemented
        return hmac.compare_digest(str(self).encode("utf-8"), str(other).encode("utf-8"))

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = str.__hash__


def webhook_secret(configured: str | None, workspace: Any) -> ConstantTimeSecret:
    """The configured secret, else the one stored in ``state/``, else a new one (stored, logged once)."""
    if configured:
        return ConstantTimeSecret(configured)
    stored = workspace.read_text(SECRET_FILE, default="").strip()
    if stored:
        return ConstantTimeSecret(stored)
    secret = secrets.token_urlsafe(_GENERATED_BYTES)
    workspace.write_text(SECRET_FILE, secret + "\n")  # a new file is created 0600 (mkstemp)
    log.info(
        "telegram: no telegram.webhook.secret_token configured; generated one and stored it in %s "
        "(webhook requests without it are refused with 403)",
        SECRET_FILE,
    )
    return ConstantTimeSecret(secret)
