"""The Tornado application, and running it: in the foreground (``assistant web``) or in a thread of the bot."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import tornado.netutil
import tornado.web

from ..config.settings import WebSettings
from ..traces import collect_secrets
from . import drafts_page, jobs_page, logbudget, memory_pages, pages, skills_install, window
from .auth import AccessToken, cookie_secret, is_loopback, load_or_create_token
from .base import SECURITY_HEADERS, WebState, log_request
from .clients import ClientAddresses
from .limits import GuardedHTTPServer, ServerLimits, http_server
from .parts import Parts
from .screen import make_screen
from .sessions import SessionList

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent
#: ``web.port`` when the config leaves it out (the record owns it; `assistant web --port` shows it).
DEFAULT_PORT = WebSettings().port
#: Routes another part mounts on the same server (the served endpoints: /mcp, /v1/), made with its state.
Mount = Callable[[WebState], list[tuple[str, type[tornado.web.RequestHandler], dict[str, object]]]]


def make_app(state: WebState, mounts: Iterable[Mount] = ()) -> tornado.web.Application:
    """Every route, the mounted ones first."""
    mounted = [route for mount in mounts for route in mount(state)]
    return tornado.web.Application(
        [*mounted, *_page_routes(state)],
        template_path=str(HERE / "templates"),
        ui_modules={"Pager": window.Pager},
        autoescape="page_escape",  # HTML-escaped, direction controls made visible (base.page_escape)
        cookie_secret=cookie_secret(state.token),
        xsrf_cookies=True,  # Tornado calls check_xsrf_cookie; the token is bound to the session (csrf.py)
        default_handler_class=pages.NotFoundHandler,
        default_handler_args={"state": state},
        log_function=log_request,
        compress_response=False,
        autoreload=False,
        debug=False,
    )


def _page_routes(state: WebState) -> list[tuple[str, type[tornado.web.RequestHandler], dict[str, object]]]:
    """The page's own routes; each page has its JSON twin under ``/api``."""
    s: dict[str, object] = {"state": state}
    a: dict[str, object] = {"state": state, "api": True}
    return [
        (r"/", pages.HomeHandler, s),
        (r"/login", pages.LoginHandler, s),
        (r"/logout", pages.LogoutHandler, s),
        (r"/memory", memory_pages.MemoryHandler, s),
        (r"/api/memory/search", memory_pages.MemoryHandler, a),
        (r"/memory/notes/new", memory_pages.NewNoteHandler, s),
        (r"/memory/facts/set", memory_pages.FactHandler, s),
        (r"/api/memory/facts/set", memory_pages.FactHandler, a),
        (r"/memory/([a-z]+)", memory_pages.CategoryHandler, s),
        (r"/api/memory/([a-z]+)", memory_pages.CategoryHandler, a),
        (r"/file", memory_pages.MemoryFileHandler, s),
        (r"/api/file", memory_pages.MemoryFileHandler, a),
        (r"/file/delete", memory_pages.FileDeleteHandler, s),
        (r"/conversations", pages.ConversationsHandler, s),
        (r"/api/conversations", pages.ConversationsHandler, a),
        (r"/conversations/([^/]+)/(\d{4}-\d{2}-\d{2})", pages.ConversationDayHandler, s),
        (r"/api/conversations/([^/]+)/(\d{4}-\d{2}-\d{2})", pages.ConversationDayHandler, a),
        (r"/traces", pages.TracesHandler, s),
        (r"/api/traces", pages.TracesHandler, a),
        (r"/traces/([0-9T]+-[0-9a-f]+)", pages.TraceHandler, s),
        (r"/api/traces/([0-9T]+-[0-9a-f]+)", pages.TraceHandler, a),
        (r"/collectors", pages.CollectorsHandler, s),
        (r"/api/collectors", pages.CollectorsHandler, a),
        (r"/collectors/([A-Za-z0-9_.-]+)/run", pages.CollectorRunHandler, s),
        (r"/api/collectors/([A-Za-z0-9_.-]+)/run", pages.CollectorRunHandler, a),
        (r"/jobs", jobs_page.JobsHandler, s),
        (r"/api/jobs", jobs_page.JobsHandler, a),
        (r"/jobs/([A-Za-z0-9_.-]+)/([a-z]+)", jobs_page.JobActionHandler, s),
        (r"/api/jobs/([A-Za-z0-9_.-]+)/([a-z]+)", jobs_page.JobActionHandler, a),
        (r"/reminders", pages.RemindersHandler, s),
        (r"/api/reminders", pages.RemindersHandler, a),
        (r"/usage", pages.UsageHandler, s),
        (r"/api/usage", pages.UsageHandler, a),
        (r"/skills", pages.SkillsHandler, s),
        (r"/api/skills", pages.SkillsHandler, a),
        (r"/skills/drafts", drafts_page.DraftsHandler, s),
        (r"/api/skills/drafts", drafts_page.DraftsHandler, a),
        (r"/skills/drafts/([a-z0-9-]+)/([a-z]+)", drafts_page.DraftActionHandler, s),
        (r"/api/skills/drafts/([a-z0-9-]+)/([a-z]+)", drafts_page.DraftActionHandler, a),
        *skills_install.routes(state),
        (r"/static/(style\.css|favicon\.svg)", pages.StaticHandler, {"path": str(HERE / "static"), "state": state}),
    ]


class WebServer:
    """The page on its own event loop in a daemon thread; ``port`` is known once ``start`` returns."""

    def __init__(
        self,
        parts: Parts,
        *,
        host: str | None = None,
        port: int | None = None,
        extra_secrets: Iterable[str] = (),
        mounts: Iterable[Mount] = (),
    ) -> None:
        web = parts.settings.web
        self.host = host or web.host
        self.port = port if port is not None else web.port
        self.access: AccessToken = load_or_create_token(web, parts.workspace)
        secrets = collect_secrets(parts.config, [self.access.value, *extra_secrets])
        self.state = WebState(
            parts=parts,
            token=self.access.value,
            secrets=secrets,
            host=self.host,
            sessions=SessionList(parts.workspace),
            clients=ClientAddresses.trusting(web.trusted_proxies),
        )
        self.app = make_app(self.state, mounts)
        self.limits = ServerLimits.from_config(web)
        logbudget.install()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: GuardedHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def banner(self) -> str:
        """What to print at start: the full sign-in link only when the token was just made."""
        if self.access.generated:
            return (
                f"web page: {self.url}?token={self.access.value}  "
                "(a new token, saved in state/web/token; shown only this once)"
            )
        where = "web.token of the config" if self.access.origin == "config" else "state/web/token in the workspace"
        return f"web page: {self.url}  (sign in with the token from {where})"

    def _bind(self) -> None:
        if not is_loopback(self.host):
            log.warning("web page listening on %s, beyond this machine: only the token protects it", self.host)
        sockets = tornado.netutil.bind_sockets(self.port, self.host)
        self.port = sockets[0].getsockname()[1]
        screen = make_screen(
            self.limits,
            listening_on=self.host,
            token=self.access.value,
            secret=cookie_secret(self.access.value),
            throttle=self.state.throttle,
            sessions=self.state.sessions,
            clients=self.state.clients,
        )
        self._server = http_server(self.app, self.limits, screen, SECURITY_HEADERS)
        self._server.add_sockets(sockets)

    def start(self) -> None:
        """Serve in a daemon thread; raises OSError here when the port cannot be bound."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(asyncio.sleep(0))
                self._bind()
            except BaseException as exc:  # reported to the caller of start()
                failure.append(exc)
                ready.set()
                return
            ready.set()
            self._loop.run_forever()
            self._loop.close()

        self._thread = threading.Thread(target=run, name="web", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            raise failure[0]

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (Ctrl-C)."""

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._bind()
            print(self.banner(), flush=True)
            await asyncio.Event().wait()

        asyncio.run(main())

    def stop(self, timeout: float = 5) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def halt() -> None:
            if self._server is not None:
                self._server.stop()
            self.state.offload.close()
            loop.stop()

        try:
            loop.call_soon_threadsafe(halt)
        except RuntimeError:
            return
        if self._thread is not None:
            self._thread.join(timeout)


def start_if_enabled(parts: Parts, extra_secrets: Iterable[str] = (), mounts: Iterable[Mount] = ()) -> WebServer | None:
    """For the bot: serve the page from this process when ``web.enabled``; a failure is logged, the bot runs on."""
    if not parts.settings.web.enabled:
        return None
    from .auth import TokenError

    try:
        server = WebServer(parts, extra_secrets=extra_secrets, mounts=mounts)
        server.start()
    except (TokenError, OSError) as exc:
        log.error("web page not started: %s", exc)
        return None
    print(server.banner(), file=sys.stderr, flush=True)
    log.info("web page serving on %s", server.url)
    return server
