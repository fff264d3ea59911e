"""The first look at every request, on its headers alone, before a byte of its body is read.

In this order: the body's size (a ``Content-Length`` over ``web.max_body_bytes`` is 413; a body
without one, chunked, is 411), then the ``Host`` (403 for a foreign name while the page listens on
loopback: a DNS-rebinding page), then a body over a few kilobytes from a request that carries no
valid token or session (413: only the sign-in form is open to it). Everything else goes on to the
handlers, which check the token, the session and CSRF.
"""

from __future__ import annotations

import math

import tornado.httputil
import tornado.web

from .auth import COOKIE_NAME, SignInThrottle, bearer_of, host_allowed, session_of, token_matches
from .clients import ClientAddresses
from .limits import ANONYMOUS_BODY_BYTES, Refusal, Screen, ServerLimits
from .sessions import SESSION_DAYS, SessionList

FOREIGN_HOST = "this page answers only at its loopback address (127.0.0.1, localhost)"


def signed_in(
    headers: tornado.httputil.HTTPHeaders, token: str, secret: str, sessions: SessionList | None = None
) -> bool:
    """Whether the headers carry the right token or the cookie of a session still signed in (nothing is
    counted here: the handler's check, which counts wrong tokens, comes later)."""
    if token_matches(bearer_of(headers.get("Authorization")), token):
        return True
    cookies = tornado.httputil.parse_cookie(headers.get("Cookie", ""))
    value = cookies.get(COOKIE_NAME)
    if not value:
        return False
    verified = tornado.web.decode_signed_value(secret, COOKIE_NAME, value, max_age_days=SESSION_DAYS)
    sid = session_of(verified)
    return sid is not None and (sessions is None or sessions.active(sid))


def make_screen(
    limits: ServerLimits,
    *,
    listening_on: str,
    token: str,
    secret: str,
    throttle: SignInThrottle,
    sessions: SessionList | None = None,
    clients: ClientAddresses | None = None,
) -> Screen:
    """The screen for one server (see the module docstring). A wrong token that meets the screen counts
    against ``throttle`` as in the handlers: the screen is no way around the bound on wrong tokens."""
    clients = clients or ClientAddresses()

    def screen(
        start_line: tornado.httputil.RequestStartLine, headers: tornado.httputil.HTTPHeaders, peer: str
    ) -> Refusal | None:
        if "Transfer-Encoding" in headers:
            return Refusal(411, "Length Required", "send the body with a Content-Length")
        given = headers.get("Content-Length", "0").strip() or "0"
        if not given.isdigit():
            return Refusal(400, "Bad Request", "Content-Length must be a whole number")
        length = int(given)
        if length > limits.max_body_bytes:
            return Refusal(413, "Content Too Large", f"the body may be at most {limits.max_body_bytes} bytes")
        if not host_allowed(headers.get("Host", ""), listening_on):
            return Refusal(403, "Forbidden", FOREIGN_HOST)
        if length > ANONYMOUS_BODY_BYTES and not signed_in(headers, token, secret, sessions):
            if bearer_of(headers.get("Authorization")) and (wait := throttle.wrong(clients.client(peer, headers))) > 0:
                return Refusal(
                    429, "Too Many Requests", "too many wrong tokens lately", (("Retry-After", str(math.ceil(wait))),)
                )
            return Refusal(
                413, "Content Too Large", f"without the token a body may be at most {ANONYMOUS_BODY_BYTES} bytes"
            )
        return None

    return screen
