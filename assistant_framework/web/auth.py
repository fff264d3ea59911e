"""The web page's access token: ``web.token`` from the config, or one generated into ``state/``.

Pure helpers plus one small file write; the handlers in :mod:`.handlers` do the HTTP side.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tornado.httputil import split_host_and_port

from ..config.settings import WebSettings
from ..workspace import Workspace

log = logging.getLogger(__name__)
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


def load_or_create_token(web: WebSettings, workspace: Workspace) -> AccessToken:
    """``web.token`` when set; else the token kept in ``state/web/token``, created on first use (mode 0600)."""
    configured = web.token.strip()
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
    """Constant-time comparison (of digests: not even the length is told); False for a missing value."""
    if not given:
        return False
    digest = hashlib.sha256(given.encode("utf-8", "replace")).digest()
    return hmac.compare_digest(digest, hashlib.sha256(token.encode("utf-8")).digest())


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


#: Clients the throttle remembers at once (the least recently heard are forgotten first).
MAX_CLIENTS = 1024


@dataclass
class _Bucket:
    """Wrong tokens "in the bucket", draining at one per ``refill`` seconds."""

    level: float = 0.0
    at: float | None = None

    def drain(self, now: float, refill: float) -> None:
        if self.at is not None:
            self.level = max(0.0, self.level - (now - self.at) / refill)
        self.at = now

    def wait(self, free: int, refill: float) -> float:
        """0 when one more fits, else the seconds until it would."""
        return 0.0 if self.level + 1 <= free else (self.level + 1 - free) * refill


@dataclass
class SignInThrottle:
    """A bound on wrong tokens over all clients together (a client is free to change its address:
    127.0.0.2, 127.0.0.3 ... are all this machine), and a smaller one for each client.

    Token buckets: ``free`` wrong tokens at once from all clients, ``per_client`` from one client
    (its address: ``clients.ClientAddresses``, which believes ``X-Forwarded-For`` only from a
    configured proxy), one more every ``refill_seconds``. Beyond either a wrong token is refused (429)
    without more work, and a warning says so at most once a minute. It never refuses the right
    token: a web page the owner visits can make the browser send wrong tokens, and they must not lock
    the owner out; a signed-in session is never asked for one. What stops guessing is the token
    itself (generated: 256 random bits; configured: 16 characters or more).
    """

    free: int = 10
    per_client: int = 5
    refill_seconds: float = 6.0
    clock: Callable[[], float] = time.monotonic
    _all: _Bucket = field(default_factory=_Bucket, repr=False)
    _clients: dict[str, _Bucket] = field(default_factory=dict, repr=False)  # least recently heard first
    _refused: int = field(default=0, repr=False)
    _reported: float | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _client(self, client: str, now: float) -> _Bucket | None:
        if not client:
            return None
        bucket = self._clients.pop(client, None) or _Bucket()
        bucket.drain(now, self.refill_seconds)
        self._clients[client] = bucket
        while len(self._clients) > MAX_CLIENTS:
            del self._clients[next(iter(self._clients))]
        return bucket

    def missed(self, client: str = "") -> float:
        """Count a wrong token from ``client`` (an address; empty: counted over all clients only); the
        seconds until another would be heard (0: this one is answered 401)."""
        with self._lock:
            now = self.clock()
            self._all.drain(now, self.refill_seconds)
            mine = self._client(client, now)
            wait = self._all.wait(self.free, self.refill_seconds)
            if mine is not None:
                wait = max(wait, mine.wait(self.per_client, self.refill_seconds))
            if wait <= 0:
                self._all.level += 1
                if mine is not None:
                    mine.level += 1
                return 0.0
            self._refused += 1
            return wait

    def wrong(self, client: str = "") -> float:
        """``missed``, and the warning (at most once a minute) when wrong tokens were refused."""
        wait = self.missed(client)
        refused = self.report()
        if refused:
            log.warning("web page: %d wrong tokens refused in the last minute (someone is guessing)", refused)
        return wait

    def report(self) -> int | None:
        """How many wrong tokens were refused since the last report, at most once a minute (else None)."""
        with self._lock:
            now = self.clock()
            if not self._refused or (self._reported is not None and now - self._reported < 60):
                return None
            refused, self._refused, self._reported = self._refused, 0, now
            return refused
