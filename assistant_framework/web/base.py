"""The request handler every page and API inherits: token auth, CSRF, security headers, redaction."""

from __future__ import annotations

import errno
import functools
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlencode
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tornado.httputil
import tornado.web
from tornado.escape import to_unicode, xhtml_escape

from assistant_framework.hints import CLI

from .. import direction
from ..json_types import JsonObject
from ..redaction import redact_text
from ..stores.provenance import is_untrusted
from ..traces import TraceStore, redact_json_text, redact_secrets
from . import csrf, window
from .auth import COOKIE_NAME, SignInThrottle, bearer_of, new_session_id, session_of, token_matches
from .clients import ClientAddresses
from .offload import LaneFull, Offload
from .parts import Parts
from .sessions import SESSION_DAYS, SessionList
from .views import jsonable

log = logging.getLogger(__name__)
T = TypeVar("T")

#: No script at all (the page needs none), styles and images from this server only, no framing.
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
#: On every answer, also those refused before a handler ran.
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}
#: Errors of a path no file can have (the request's fault, answered 400).
PATH_ERRNOS = (errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR, errno.ELOOP, errno.EINVAL)
#: The longest path the access log writes (the rest is cut: a long address must not fill the log).
LOGGED_PATH_CHARS = 200


def page_escape(value: str | bytes) -> str:
    """Every ``{{ }}`` of the templates (server.py's ``autoescape``): HTML-escaped, each direction control (and a
    mark away from letters of its direction) shown as its mark (direction.py), so a note or a mail cannot reorder
    the page around it; marked before the escape, which would put an entity's letters beside a mark. A form's value
    that is sent back as stored (an id, the editor's text) is written with ``exact``, the plain escape."""
    return xhtml_escape(direction.marked(to_unicode(value)))


def log_request(handler: tornado.web.RequestHandler) -> None:
    """The access log without the query string (it may carry ``?token=``); errors at WARNING."""
    status = handler.get_status()
    level = logging.DEBUG if status < 400 else logging.WARNING if status < 500 else logging.ERROR
    logging.getLogger("tornado.access").log(
        level,
        "%d %s %s %.0fms",
        status,
        handler.request.method,
        handler.request.path[:LOGGED_PATH_CHARS],
        1000.0 * handler.request.request_time(),
    )


@dataclass
class WebState:
    """What every handler shares: the live parts, the token and the secrets to keep off the page."""

    parts: Parts
    token: str
    secrets: list[str]
    #: The address the server listens on; on loopback, only loopback names are accepted as Host.
    host: str = "127.0.0.1"
    #: The bound on wrong tokens, all clients together.
    throttle: SignInThrottle = field(default_factory=SignInThrottle)
    #: The threads that do the blocking work (files, store, index, searches, collector runs).
    offload: Offload = field(default_factory=Offload)
    #: The sessions signed in (sign-out takes one off: a copied cookie no longer counts).
    sessions: SessionList | None = None
    #: Who sent a request, for the bound on wrong tokens of each client (``web.trusted_proxies``).
    clients: ClientAddresses = field(default_factory=ClientAddresses)

    @property
    def traces(self) -> TraceStore:
        return TraceStore(self.parts.workspace)

    @functools.cached_property
    def csrf_key(self) -> bytes:
        return csrf.csrf_key(self.token)

    @functools.cached_property
    def page_secrets(self) -> list[str]:
        """Each secret as it can appear in a rendered page: as is, HTML-escaped, and JSON- then HTML-escaped."""
        forms = {
            form
            for secret in self.secrets
            for form in (secret, xhtml_escape(secret), xhtml_escape(json.dumps(secret, ensure_ascii=False)[1:-1]))
        }
        return sorted(forms, key=len, reverse=True)


class BaseHandler(tornado.web.RequestHandler):
    """Answers 401 without the token; redacts secrets from everything it writes."""

    public = False  # the login page and the stylesheet are served without the token

    def initialize(self, state: WebState, api: bool = False) -> None:
        self.state = state
        self.api = api

    @property
    def parts(self) -> Parts:
        return self.state.parts

    def set_default_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.set_header(name, value)

    async def off_loop(self, lane: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a thread of the lane (``search``, ``files``, ``runs``), never on the event
        loop; 503 with Retry-After when the lane is full."""
        try:
            done: T = await getattr(self.state.offload, lane).run(fn, *args)
            return done
        except LaneFull as exc:
            self._retry_after = 2
            raise tornado.web.HTTPError(503, str(exc)) from None

    # -- authentication ----------------------------------------------------------

    def token_ok(self, given: str | None) -> bool:
        """Whether a presented token is right. The right one always is; a wrong one counts against the
        bound on wrong tokens (all clients together), and beyond it is refused with 429."""
        if not given:
            return False
        if token_matches(given, self.state.token):
            return True
        wait = self.state.throttle.wrong(self.client_address())
        if wait > 0:
            self._retry_after = math.ceil(wait)
            raise tornado.web.HTTPError(
                429, f"too many wrong tokens lately: try again in {self._retry_after} s (the right token always works)"
            )
        return False

    def client_address(self) -> str:
        """Who sent this request: the peer, or behind a configured proxy the address it forwarded (clients.py)."""
        return self.state.clients.client(self.request.remote_ip or "", self.request.headers)

    def _bearer_ok(self) -> bool:
        # Checked once per request (a POST asks for it twice: the CSRF check runs before ``prepare``).
        if getattr(self, "_bearer", None) is None:
            self._bearer = False
            self._bearer = self.token_ok(bearer_of(self.request.headers.get("Authorization")))
        return self._bearer

    def get_current_user(self) -> str | None:
        if self._bearer_ok():
            return "bearer"
        return "cookie" if self.session_id() else None

    def session_id(self) -> str | None:
        """The id of the browser's signed-in session (from its signed cookie, still on the server's list of
        sessions), else None."""
        if hasattr(self, "_session_id"):  # read once per request
            return self._session_id
        sid = session_of(self.get_signed_cookie(COOKIE_NAME, max_age_days=SESSION_DAYS))
        if sid is not None and self.state.sessions is not None and not self.state.sessions.active(sid):
            sid = None
        self._session_id: str | None = sid
        return sid

    def sign_in(self) -> None:
        """A new session for this browser (a new id each time: nothing of an earlier cookie carries over)."""
        sid = new_session_id()
        if self.state.sessions is not None:
            self.state.sessions.add(sid)
        self.set_signed_cookie(COOKIE_NAME, sid, expires_days=SESSION_DAYS, **self._cookie_flags())
        self.clear_cookie(csrf.LOGIN_COOKIE, path="/")

    def _cookie_flags(self) -> dict[str, Any]:
        """The flags of the page's cookies: never readable by a script, never sent by another site, and
        ``Secure`` when the browser reached the page over HTTPS (a TLS proxy's ``X-Forwarded-Proto``): a cookie
        without it is sent in the clear to ``http://`` at the same name, where anyone on the way reads it."""
        forwarded = self.request.headers.get("X-Forwarded-Proto", "").split(",")[-1].strip().lower()
        secure = self.request.protocol == "https" or forwarded == "https"
        return {"httponly": True, "samesite": "Strict", "path": "/", "secure": secure}

    # -- CSRF: form tokens bound to the session (csrf.py) -------------------------

    def _csrf_subject(self, create: bool) -> str | None:
        """What this browser's form tokens are bound to: its session, else its sign-in pre-session
        (made, with its signed cookie, when ``create`` and there is none)."""
        cached: str | None = getattr(self, "_csrf_subject_cache", None)
        if cached:
            return cached
        sid = self.session_id()
        subject = f"session:{sid}" if sid else None
        if subject is None:
            pre = session_of(self.get_signed_cookie(csrf.LOGIN_COOKIE, max_age_days=csrf.LOGIN_COOKIE_DAYS))
            if pre is None and create:
                pre = new_session_id()
                self.set_signed_cookie(
                    csrf.LOGIN_COOKIE, pre, expires_days=csrf.LOGIN_COOKIE_DAYS, **self._cookie_flags()
                )
            subject = f"login:{pre}" if pre else None
        self._csrf_subject_cache = subject
        return subject

    @property
    def xsrf_token(self) -> bytes:
        """The token every form of this page carries (Tornado's ``xsrf_form_html`` puts it in)."""
        return csrf.form_token(self.state.csrf_key, self._csrf_subject(create=True) or "").encode("ascii")

    def check_xsrf_cookie(self) -> None:
        """A browser's POST, PUT or DELETE must carry its session's form token (in the form or a header;
        never the address). The Bearer token needs none: a forged cross-site form cannot send it."""
        if self._bearer_ok():
            return
        if not self.public and self.current_user is None:
            raise tornado.web.HTTPError(401)
        given = self.get_body_argument(csrf.FIELD, None) or next(
            (self.request.headers[h] for h in csrf.HEADERS if h in self.request.headers), None
        )
        if not csrf.token_fits(self.state.csrf_key, self._csrf_subject(create=False), given):
            raise tornado.web.HTTPError(
                403,
                "this form's token is not your session's (an old page, or another site): reload and try again",
            )

    def prepare(self) -> None:
        # The Host was checked before the body was read (screen.py), as for every request.
        given = self.get_query_argument("token", None)
        if given is not None and self.request.method in ("GET", "HEAD"):
            if not self.token_ok(given):
                raise tornado.web.HTTPError(401)
            self.sign_in()
            # Drop the token from the address bar (and from the browser's history) at once.
            rest = [
                (k, v)
                for k, values in self.request.query_arguments.items()
                if k != "token"
                for v in (x.decode("utf-8", "replace") for x in values)
            ]
            # To this site only: a path starting ``//`` (or ``/\\``, read alike) would be another host's address.
            here = "/" + self.request.path.lstrip("/\\")
            self.redirect(here + (f"?{urlencode(rest)}" if rest else ""))
            return
        if not self.public and self.current_user is None:
            raise tornado.web.HTTPError(401)

    def _handle_request_exception(self, e: BaseException) -> None:
        # A path no file can have (too long, through a file, a loop) is the request's fault: a clear 400,
        # not a 500 with a traceback; out of descriptors is a moment's trouble: 503.
        converted = None
        if isinstance(e, OSError) and e.errno in PATH_ERRNOS:
            converted = tornado.web.HTTPError(400, "no file can be at that path (%s)", e.strerror or "")
        elif isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
            self._retry_after = 5
            converted = tornado.web.HTTPError(503, "the bot is short of open files: try again in a moment")
        if converted is None:
            super()._handle_request_exception(e)
            return
        try:
            raise converted from e
        except tornado.web.HTTPError as error:
            super()._handle_request_exception(error)

    def _request_summary(self) -> str:
        # Tornado logs errors with the full URI; a ``?token=`` must not reach the log.
        return f"{self.request.method} {self.request.path[:LOGGED_PATH_CHARS]} ({self.request.remote_ip})"

    # -- output --------------------------------------------------------------------

    def redact(self, text: str) -> str:
        # The page is escaped before it is redacted: a secret with & < > " ' is there in its escaped form.
        # Every run of 8+ of its characters goes too, as in the JSON answers.
        return redact_text(text, self.state.page_secrets)

    def get_template_namespace(self) -> dict[str, Any]:
        return {**super().get_template_namespace(), "page_escape": page_escape, "exact": xhtml_escape}

    def page(self, template: str, **values: object) -> None:
        values.setdefault("title", "")
        values.setdefault("untrusted", is_untrusted)  # labels a record taken from outside content
        html = self.render_string(template, nav=self.request.path, local=self.local, **values).decode("utf-8")
        self.set_header("Content-Type", "text/html; charset=UTF-8")
        self.finish(self.redact(html))

    def send_json(self, value: object, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        text = json.dumps(jsonable(redact_secrets(jsonable(value), self.state.secrets)), ensure_ascii=False, indent=1)
        self.finish(redact_json_text(text, self.state.secrets))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        reason = self._reason
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, tornado.web.HTTPError) and exc.log_message:
            reason = exc.log_message
        if status_code in (429, 503) and getattr(self, "_retry_after", None):
            self.set_header("Retry-After", str(self._retry_after))
        if status_code == 401:
            reason = f"sign in with the token (see the log of `{CLI} web`, or state/web/token)"
        if (
            self.api
            or self.request.path.startswith("/api/")
            or "application/json" in self.request.headers.get("Accept", "")
        ):
            self.send_json({"error": reason, "status": status_code}, status_code)
            return
        self.page(
            "error.html",
            title=f"{status_code}",
            status=status_code,
            reason=reason,
            signed_in=self.current_user is not None if status_code != 401 else False,
        )

    def int_argument(self, name: str, default: int, low: int, high: int) -> int:
        """A whole-number query argument within [low, high]; 400 for anything else."""
        text = self.get_query_argument(name, "").strip()
        if not text:
            return default
        if not text.isdigit():
            raise tornado.web.HTTPError(400, f"{name} must be a whole number")
        return max(low, min(high, int(text)))

    def entries(self, rows: Sequence[T], param: str = "from") -> window.Window[T]:
        """The page of a list of entries (files, facts, chats, jobs, reminders) that ``param=`` asks for."""
        return window.window(rows, self.int_argument(param, 0, 0, 10**9), window.ENTRIES)

    def local(self, iso: object, seconds: bool = False) -> str:
        """An ISO time in the configured time zone, ``YYYY-MM-DD HH:MM``; ``-`` when absent."""
        try:
            moment = datetime.fromisoformat(str(iso))
        except ValueError:
            return "-" if not iso else str(iso)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        try:
            zone = ZoneInfo(self.parts.settings.runtime.timezone)
        except (ValueError, ZoneInfoNotFoundError):
            zone = ZoneInfo("UTC")
        return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")

    def raw_argument(self, name: str) -> str:
        """An argument exactly as sent (Tornado's getters turn control characters into spaces,
        which would quietly turn a refused ``a\\x00b`` into another, valid file name)."""
        values = self.request.query_arguments.get(name) or self.request.body_arguments.get(name) or [b""]
        try:
            return values[-1].decode("utf-8")
        except UnicodeDecodeError:
            raise tornado.web.HTTPError(400, "arguments must be UTF-8") from None

    def json_body(self) -> JsonObject:
        """The request body as a JSON object (400 otherwise)."""
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError:
            raise tornado.web.HTTPError(400, "the body must be JSON") from None
        if not isinstance(body, dict):
            raise tornado.web.HTTPError(400, "the body must be a JSON object")
        return body
