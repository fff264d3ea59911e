"""The configured hooks with their secrets, and whether a request is signed with one.

A request proves it knows the hook's secret in one of two ways: GitHub's ``X-Hub-Signature-256:
sha256=<hex>`` (an HMAC-SHA256 of the exact body bytes with the secret as key), or ``Authorization: Bearer
<secret>`` for a sender that cannot sign. Both are compared in constant time (``hmac.compare_digest``). A hook
whose secret is unset or short is a ConfigError naming the key or the variable: never a hook anyone can call.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass

from assistant_framework.config.errors import ConfigError
from assistant_framework.config.settings import HookSettings, HooksSettings

#: A secret shorter than this is refused: it could be guessed.
MIN_SECRET_CHARS = 16
SIGNATURE_HEADER = "X-Hub-Signature-256"


@dataclass(frozen=True)
class Hook:
    """A configured hook with its secret (never shown: ``repr`` leaves it out)."""

    settings: HookSettings
    secret: str

    def __repr__(self) -> str:
        return f"Hook({self.settings.name!r}, {self.settings.kind})"

    @property
    def name(self) -> str:
        return self.settings.name


def secret_problem(settings: HookSettings, environ: Mapping[str, str]) -> str | None:
    """Why a hook's secret cannot be used (naming its key or variable), or None."""
    where = f"hooks.endpoints.{settings.name}"
    if settings.secret_env:
        value = environ.get(settings.secret_env, "").strip()
        source = f"the environment variable {settings.secret_env}"
        if not value:
            return f"{where}: {source} is not set"
    else:
        value, source = settings.secret.strip(), f"{where}.secret"
    if len(value) < MIN_SECRET_CHARS:
        return (
            f"{where}: the secret in {source} is shorter than {MIN_SECRET_CHARS} characters "
            "(make one: python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return None


def read_hooks(settings: HooksSettings, environ: Mapping[str, str] | None = None) -> dict[str, Hook]:
    """Every configured hook by name with its secret; a ConfigError names the first that has none usable."""
    env = os.environ if environ is None else environ
    hooks: dict[str, Hook] = {}
    for name, entry in settings.endpoints.items():
        problem = secret_problem(entry, env)
        if problem is not None:
            raise ConfigError(problem)
        secret = env[entry.secret_env].strip() if entry.secret_env else entry.secret.strip()
        hooks[name] = Hook(entry, secret)
    return hooks


def signature_of(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value of ``body`` signed with ``secret``: ``sha256=<hex>``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def authentic(hook: Hook, body: bytes, signature: str | None, authorization: str | None) -> bool:
    """The request carries the body's signature with the hook's secret, or the secret as a bearer token."""
    if signature:
        return hmac.compare_digest(signature.strip().encode("utf-8"), signature_of(hook.secret, body).encode("utf-8"))
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return False
    return hmac.compare_digest(token.strip().encode("utf-8"), hook.secret.encode("utf-8"))
