"""Form tokens bound to the browser's session, not to a cookie a page elsewhere could set.

Cookies ignore ports: a page served from another port of the same host (a dev server, a local
tool showing a downloaded file) can set a cookie this page then receives, and its forms reach this
page as same-site, with the owner's session cookie. A token that only had to match a cookie could
therefore be chosen by that page. Here a form's token is an HMAC, under a key derived from the
access token, of the session's id (held in the signed, ``HttpOnly`` session cookie that no page can
read or forge): ``session:<id>`` once signed in, ``login:<id>`` of a signed pre-session cookie for
the sign-in form. A new token (or a new sign-in) makes every older form token useless.
"""

from __future__ import annotations

import hashlib
import hmac

#: The signed cookie that carries the sign-in form's pre-session id (only until the sign-in).
LOGIN_COOKIE = "assistant_web_login"
LOGIN_COOKIE_DAYS = 1
FIELD = "_xsrf"
#: Scripts signed in with a session (not the Bearer token) may send the token in one of these.
HEADERS = ("X-Xsrftoken", "X-Csrftoken")


def csrf_key(token: str) -> bytes:
    """The key of every form token, derived from the access token (another key than the cookies')."""
    return hashlib.sha256(b"assistant-web-csrf\x00" + token.encode("utf-8")).digest()


def form_token(key: bytes, subject: str) -> str:
    """The form token of one session (``session:<id>``) or pre-session (``login:<id>``)."""
    return hmac.new(key, subject.encode("utf-8"), hashlib.sha256).hexdigest()


def token_fits(key: bytes, subject: str | None, given: str | None) -> bool:
    """Whether ``given`` is the form token of ``subject`` (constant time); False when either is missing."""
    if not subject or not given:
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), form_token(key, subject).encode("ascii"))
