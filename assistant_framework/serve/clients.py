"""The configured clients (``serve.clients``) with their tokens read from the environment, and who a bearer
token belongs to.

A client whose variable is unset, or holds a token too short to be a secret, is a ConfigError naming the
variable: never a client that any token (or none) would open. A token is compared with every client's in
constant time (``hmac.compare_digest``), so the time taken says nothing about how close a guess was.
"""

from __future__ import annotations

import hmac
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from assistant_framework.config.errors import ConfigError
from assistant_framework.config.settings import ClientSettings, ServeSettings

#: A bearer token shorter than this is refused: it could be guessed.
MIN_TOKEN_CHARS = 24


@dataclass(frozen=True)
class Client:
    """A configured client with its token (never shown: ``repr`` leaves it out)."""

    settings: ClientSettings
    token: str

    def __repr__(self) -> str:
        return f"Client({self.settings.name!r}, write={self.settings.write})"

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def write(self) -> bool:
        return self.settings.write

    @property
    def source(self) -> str:
        """What its writes are marked with: never the owner's own words."""
        return f"mcp:{self.name}"

    @property
    def conversation_id(self) -> str:
        """Its chats' conversation: apart from every chat of the owner's."""
        return f"api:{self.name}"


def token_problem(settings: ClientSettings, environ: Mapping[str, str]) -> str | None:
    """Why a client's token cannot be used (naming its variable), or None."""
    value = environ.get(settings.token_env, "")
    if not value.strip():
        return f"serve.clients: {settings.name!r}: the environment variable {settings.token_env} is not set"
    if len(value.strip()) < MIN_TOKEN_CHARS:
        return (
            f"serve.clients: {settings.name!r}: the token in {settings.token_env} is shorter than "
            f"{MIN_TOKEN_CHARS} characters (make one: python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return None


def read_clients(settings: ServeSettings, environ: Mapping[str, str] | None = None) -> tuple[Client, ...]:
    """Every configured client with its token; a ConfigError names the first variable that is unset or short."""
    env = os.environ if environ is None else environ
    clients = []
    for entry in settings.clients:
        problem = token_problem(entry, env)
        if problem is not None:
            raise ConfigError(problem)
        clients.append(Client(entry, env[entry.token_env].strip()))
    return tuple(clients)


def client_for(clients: tuple[Client, ...], authorization: str | None) -> Client | None:
    """The client an ``Authorization: Bearer <token>`` header names, or None. Every client's token is compared
    (no early return), each in constant time."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    given = token.strip().encode("utf-8")
    found: Client | None = None
    for client in clients:
        if hmac.compare_digest(given, client.token.encode("utf-8")):
            found = client
    return found


class PerMinute:
    """At most ``limit`` calls in any 60 seconds for each client name (a sliding window)."""

    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = max(1, int(limit))
        self._clock = clock
        self._calls: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, name: str) -> bool:
        """Count one call of ``name``; False (not counted) when it has made ``limit`` in the last minute."""
        now = self._clock()
        with self._lock:
            calls = self._calls.setdefault(name, deque())
            while calls and now - calls[0] >= 60.0:
                calls.popleft()
            if len(calls) >= self.limit:
                return False
            calls.append(now)
            return True
