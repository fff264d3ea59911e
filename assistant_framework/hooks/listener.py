"""The hooks listener: ``POST /hooks/<name>`` on its own port (``hooks.listen``, ``hooks.port``), on an event
loop in a thread of its own, handing each accepted call to the bot (``Start``).

In this order, before anything runs: the body's size from its ``Content-Length`` (413 unread; chunked: 411),
the hook's name (404), its signature or bearer secret (401; wrong ones past ``BAD_PER_MINUTE`` a minute: 429),
the delivery id (400 when it is not a short printable id), the hook's ``per_minute`` bound (429). A delivery
taken before answers 200 and runs nothing; a new one goes to ``Start`` (in a worker thread, one call at a
time, so the same delivery sent twice at once is still one) and is remembered once ``Start`` took it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import tornado.httputil
import tornado.netutil
import tornado.web

from assistant_framework.config.settings import HooksSettings
from assistant_framework.hooks.auth import SIGNATURE_HEADER, Hook, authentic
from assistant_framework.hooks.deliveries import MAX_ID_CHARS, Deliveries, delivery_key
from assistant_framework.serve.clients import PerMinute
from assistant_framework.web import logbudget
from assistant_framework.web.base import SECURITY_HEADERS
from assistant_framework.web.limits import GuardedHTTPServer, Refusal, ServerLimits, http_server

log = logging.getLogger(__name__)

#: Wrong signatures a hook takes a minute before it answers 429 (a guesser gains nothing from more).
BAD_PER_MINUTE = 20
#: The delivery id headers read, first found wins (``X-GitHub-Delivery``: GitHub's).
DELIVERY_HEADERS = ("X-Delivery-Id", "X-GitHub-Delivery")
MAX_CONNECTIONS = 32


@dataclass(frozen=True)
class HookCall:
    """One authenticated, new delivery to a hook."""

    hook: Hook
    body: bytes
    delivery: str  # the delivery's key (deliveries.delivery_key): the run's id is made of it

    @property
    def run_id(self) -> str:
        return f"hook:{self.hook.name}:{self.delivery[:24]}"


@dataclass(frozen=True)
class Outcome:
    """What the bot made of a call: ``taken`` (it runs, or ran before) and the answer's status and sentence."""

    taken: bool
    status: int
    message: str


#: The bot's part: start the call's run (durably) or say why not; called in a worker thread.
Start = Callable[[HookCall], Outcome]


def screen(limits: ServerLimits) -> Callable[..., Refusal | None]:
    """The listener's look at a request's headers before its body is read: the body's size only (the
    signature needs the body; anything may call from outside, so no Host check)."""

    def look(
        start_line: tornado.httputil.RequestStartLine, headers: tornado.httputil.HTTPHeaders, peer: str
    ) -> Refusal | None:
        if "Transfer-Encoding" in headers:
            return Refusal(411, "Length Required", "send the body with a Content-Length")
        given = headers.get("Content-Length", "0").strip() or "0"
        if not given.isdigit():
            return Refusal(400, "Bad Request", "Content-Length must be a whole number")
        if int(given) > limits.max_body_bytes:
            return Refusal(413, "Content Too Large", f"the body may be at most {limits.max_body_bytes} bytes")
        return None

    return look


class HookHandler(tornado.web.RequestHandler):
    """``POST /hooks/<name>``."""

    def initialize(self, listener: HookListener) -> None:
        self.listener = listener

    def set_default_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.set_header(name, value)
        self.set_header("Content-Type", "application/json")

    def answer(self, status: int, message: str, **extra: Any) -> None:
        self.set_status(status)
        self.finish(json.dumps({"status": status, "message": message, **extra}))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        reason = self._reason if status_code < 500 else "the hook failed; see the bot's log"
        self.finish(json.dumps({"status": status_code, "message": reason}))

    async def post(self, name: str) -> None:
        listener = self.listener
        hook = listener.hooks.get(name)
        if hook is None:
            self.answer(404, f"no hook named {name[:64]!r}")
            return
        body = self.request.body or b""
        headers = self.request.headers
        if not authentic(hook, body, headers.get(SIGNATURE_HEADER), headers.get("Authorization")):
            if not listener.bad.allow(name):
                self.set_header("Retry-After", "60")
                self.answer(429, "too many wrong signatures lately")
                return
            log.warning("hooks: %s: a call without a valid signature from %s (refused)", name, self.request.remote_ip)
            self.answer(401, f"sign the body with the hook's secret ({SIGNATURE_HEADER}: sha256=...)")
            return
        delivery_id = next((headers[h].strip() for h in DELIVERY_HEADERS if headers.get(h, "").strip()), None)
        if delivery_id is not None and (len(delivery_id) > MAX_ID_CHARS or not delivery_id.isprintable()):
            self.answer(400, f"the delivery id must be at most {MAX_ID_CHARS} printable characters")
            return
        if not listener.per_minute.allow(name):
            self.set_header("Retry-After", "60")
            self.answer(429, f"more than {listener.settings.per_minute} calls this minute (hooks.per_minute)")
            return
        call = HookCall(hook, body, delivery_key(name, delivery_id, body))
        outcome = await asyncio.get_running_loop().run_in_executor(listener.threads, listener.take, call)
        self.answer(outcome.status, outcome.message, **({"run": call.run_id} if outcome.taken else {}))


class NoRoute(tornado.web.RequestHandler):
    def set_default_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.set_header(name, value)
        self.set_header("Content-Type", "application/json")

    def prepare(self) -> None:
        self.set_status(404)
        self.finish(json.dumps({"status": 404, "message": "hooks are at POST /hooks/<name>"}))


class HookListener:
    """The listener on its own event loop in a daemon thread; ``port`` is known once ``start`` returns."""

    def __init__(self, settings: HooksSettings, hooks: dict[str, Hook], deliveries: Deliveries, start: Start) -> None:
        self.settings = settings
        self.hooks = hooks
        self.deliveries = deliveries
        self.start_run = start
        self.host, self.port = settings.listen, settings.port
        self.per_minute = PerMinute(settings.per_minute)
        self.bad = PerMinute(BAD_PER_MINUTE)
        self.threads = ThreadPoolExecutor(2, thread_name_prefix="hooks")
        self._taking = threading.Lock()
        self.limits = ServerLimits(
            max_connections=MAX_CONNECTIONS,
            max_body_bytes=settings.max_body_bytes,
            header_timeout_seconds=10.0,
            body_timeout_seconds=30.0,
        )
        self.app = tornado.web.Application(
            [(r"/hooks/([A-Za-z0-9][A-Za-z0-9_-]{0,63})", HookHandler, {"listener": self})],
            default_handler_class=NoRoute,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: GuardedHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def take(self, call: HookCall) -> Outcome:
        """A delivery taken before: 200, nothing runs; else the bot's start, remembered once it took it."""
        with self._taking:
            if self.deliveries.taken(call.delivery):
                log.info(
                    "hooks: %s: delivery %s came again; it ran before (not run again)", call.hook.name, call.run_id
                )
                return Outcome(False, 200, "this delivery was received before; not run again")
            try:
                outcome = self.start_run(call)
            except Exception:  # noqa: BLE001 - the sender gets a sentence, the log the traceback
                log.exception("hooks: %s: the run could not be started", call.hook.name)
                return Outcome(False, 503, "the run could not be started; see the bot's log")
            if outcome.taken:
                self.deliveries.record(call.delivery)
            return outcome

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/hooks/"

    def _bind(self) -> None:
        sockets = tornado.netutil.bind_sockets(self.port, self.host)
        self.port = sockets[0].getsockname()[1]
        logbudget.install(loggers=(*logbudget.SERVER_LOGGERS, __name__))  # each kind of line 20 a minute
        self._server = http_server(self.app, self.limits, screen(self.limits), SECURITY_HEADERS)
        self._server.add_sockets(sockets)

    def start(self) -> None:
        """Listen in a daemon thread; raises OSError here when the port cannot be bound."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            self._loop = loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(asyncio.sleep(0))
                self._bind()
            except BaseException as exc:  # reported to the caller of start()
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name="hooks", daemon=True)
        self._thread.start()
        ready.wait(30)
        if failure:
            raise failure[0]

    def stop(self, timeout: float = 5) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def halt() -> None:
            if self._server is not None:
                self._server.stop()
            loop.stop()

        try:
            loop.call_soon_threadsafe(halt)
        except RuntimeError:
            return
        if self._thread is not None:
            self._thread.join(timeout)
        self.threads.shutdown(wait=False, cancel_futures=True)
