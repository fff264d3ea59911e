"""The web page's access token: ``web.token`` from the config, or one generated into ``state/``.

Pure helpers plus one small file write; the handlers in :mod:`.handlers` do the HTTP side.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from tornado.httputil import split_host_and_port

from ..workspace import Workspace

TOKEN_FILE = "state/web/token"
COOKIE_NAME = "assistant_web"
#: Tokens shorter than this are refused: the token is the only thing between the page and the network.
MIN_TOKEN_CHARS = 16


class TokenError(ValueError):
    """A configured token that is unusable (too short)."""


@dataclass(frozen=True)
class AccessToken:
    """The token and where it came from (``config`` or ``generated`` / ``stored`` in ``state/``)."""

    value: str
    origin: str

    @property
    def generated(self) -> bool:
        return self.origin == "generated"


def load_or_create_token(web_config: dict, workspace: Workspace) -> AccessToken:
    """``web.token`` when set; else the token kept in ``state/web/token``, created on first use (mode 0600)."""
    configured = str(web_config.get("token") or "").strip()
    if configured:
        if len(configured) < MIN_TOKEN_CHARS:
            raise TokenError(f"web.token must be at least {MIN_TOKEN_CHARS} characters")
        return AccessToken(configured, "config")
    stored = workspace.read_text(TOKEN_FILE, default="").strip()
    if len(stored) >= MIN_TOKEN_CHARS:
        return AccessToken(stored, "stored")
    value = secrets.token_urlsafe(32)
    workspace.write_text(TOKEN_FILE, value + "\n")
    os.chmod(workspace.path(TOKEN_FILE), 0o600)
    return AccessToken(value, "generated")


def token_matches(given: str | None, token: str) -> bool:
    """Constant-time comparison; False for a missing value."""
    if not given:
        return False
    return hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))


def bearer_of(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, else None."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def cookie_secret(token: str) -> str:
    """The key that signs session cookies, derived from the token: a new token ends old sessions."""
    return hashlib.sha256(b"assistant-web-cookie\x00" + token.encode("utf-8")).hexdigest()


#: A session id (the signed value of the session cookie); ``new_session_id`` makes them.
SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{22,64}$")


def new_session_id() -> str:
    """A fresh random session id (a new one at every sign-in)."""
    return secrets.token_urlsafe(24)


def session_of(signed_value: bytes | str | None) -> str | None:
    """The session id a verified cookie value holds, or None (an old-style or malformed value)."""
    if signed_value is None:
        return None
    text = signed_value.decode("ascii", "replace") if isinstance(signed_value, bytes) else signed_value
    return text if SESSION_ID.match(text) else None


def host_allowed(host_header: str, listening_on: str) -> bool:
    """Whether a request's ``Host`` may reach the page: any while it listens beyond loopback; on loopback
    only loopback names (a DNS-rebinding page arrives with its own name). No ``Host`` (HTTP/1.0) is
    the machine's own client."""
    if not is_loopback(listening_on) or not host_header.strip():
        return True
    name, _ = split_host_and_port(host_header.strip().lower())
    return is_loopback(name)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class SignInThrottle:
    """Wrong tokens per client address: after ``free`` misses, every further try waits.

    The wait starts at ``first_wait`` seconds and doubles with each miss after that, up to
    ``max_wait``; a right token clears the address. A signed-in session (its cookie) is never
    throttled: only guesses are. At most ``max_addresses`` are remembered (the oldest go first).
    """

    free: int = 5
    first_wait: float = 30.0
    max_wait: float = 3600.0
    max_addresses: int = 10_000
    clock: Callable[[], float] = time.monotonic
    _misses: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def wait_for(self, address: str) -> float:
        """Seconds this address must wait before its next try; 0 when it may try now."""
        with self._lock:
            entry = self._misses.get(address)
            return max(0.0, entry[1] - self.clock()) if entry else 0.0

    def missed(self, address: str) -> None:
        """Count a wrong token from this address."""
        with self._lock:
            count = self._misses.pop(address, (0, 0.0))[0] + 1
            wait = 0.0 if count <= self.free else min(self.max_wait, self.first_wait * 2 ** (count - self.free - 1))
            self._misses[address] = (count, self.clock() + wait)
            while len(self._misses) > self.max_addresses:
                self._misses.popitem(last=False)

    def succeeded(self, address: str) -> None:
        """A right token: the address starts afresh."""
        with self._lock:
            self._misses.pop(address, None)
