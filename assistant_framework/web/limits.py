"""What one connection may take from the process: the page must never take the bot down.

The page runs inside the bot's process (``web.enabled``), so every descriptor, byte and log line it
uses is the bot's. Here: how many connections at once (derived from the open-file limit, with a
reserve left for the bot's own work), how long a connection may take to send its headers and its
body, how large a body may be (refused from its ``Content-Length``, before it is read), how large
a request's head may be (answered 414 or 431, not dropped), and an
accept loop that, when the process is out of descriptors anyway, pauses and says so once a minute
instead of spinning on the error.
"""

from __future__ import annotations

import errno
import json
import logging
import resource
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tornado.httpserver
import tornado.httputil
import tornado.iostream
from tornado import gen
from tornado.http1connection import HTTP1Connection, HTTP1ServerConnection
from tornado.ioloop import IOLoop

from ..config.settings import WebSettings

log = logging.getLogger(__name__)

#: A request without a valid token or session may send at most this much (the sign-in form needs less).
ANONYMOUS_BODY_BYTES = 16 * 1024
#: Request line and headers together; a longer head is answered 414 (its request line alone is longer) or 431.
MAX_HEADER_BYTES = 16 * 1024
#: Descriptors always left to the bot (its chats, model calls, files, the index): at least this many,
#: and at least half of the open-file limit.
FD_RESERVE = 128
#: Out of descriptors while accepting: stop accepting this long, then try again.
ACCEPT_PAUSE_SECONDS = 0.5
ACCEPT_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
#: How many connections one wake-up accepts at most (as Tornado's own accept loop).
ACCEPT_BATCH = 128
#: At the cap, a connection is pushed out only after waiting this long for its request's headers; till then
#: new ones wait in the listen backlog. Pushed out at once, a request whose bytes were already there (the
#: owner's) was reset when a flood of connections accepted in the same wake-up came after it.
PUSH_OUT_AFTER_SECONDS = 0.5


def open_file_limit() -> int:
    """The process's soft limit on open descriptors (a large number when unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1 << 20 if soft == resource.RLIM_INFINITY else int(soft)


def connection_cap(configured: int, fd_limit: int) -> int:
    """At most ``configured`` connections, and never more than the descriptors beyond the bot's reserve."""
    room = fd_limit - max(FD_RESERVE, fd_limit // 2)
    return max(1, min(configured, room))


@dataclass(frozen=True)
class ServerLimits:
    """The bounds of the page's server (``web.max_connections`` and the others; the cap is the derived one)."""

    max_connections: int
    max_body_bytes: int
    header_timeout_seconds: float
    body_timeout_seconds: float

    @classmethod
    def from_config(cls, web: WebSettings, fd_limit: int | None = None) -> ServerLimits:
        """The limits of the ``web`` record, the cap fitted to the open-file limit."""
        configured = web.max_connections
        limit = open_file_limit() if fd_limit is None else fd_limit
        cap = connection_cap(configured, limit)
        if cap < configured:
            log.warning(
                "web page: at most %d connections at once (not %d): the open-file limit is %d and the bot keeps "
                "the rest; raise it (LimitNOFILE= in the service, or `ulimit -n`)",
                cap,
                configured,
                limit,
            )
        return cls(
            max_connections=cap,
            max_body_bytes=web.max_body_bytes,
            header_timeout_seconds=web.header_timeout_seconds,
            body_timeout_seconds=web.body_timeout_seconds,
        )


@dataclass(frozen=True)
class Refusal:
    """A request answered from its headers alone: the body is never read, the connection is closed."""

    status: int
    reason: str
    message: str
    headers: tuple[tuple[str, str], ...] = ()


#: ``screen(start_line, headers, peer)``: a Refusal for a request that must not be read further, else None
#: (``peer``: the address of the connection's other end).
Screen = Callable[[tornado.httputil.RequestStartLine, tornado.httputil.HTTPHeaders, str], "Refusal | None"]


def raw_response(refusal: Refusal, extra_headers: dict[str, str], json_body: bool) -> bytes:
    """The whole HTTP/1.1 answer of a refusal, closing the connection."""
    if json_body:
        body = json.dumps({"error": refusal.message, "status": refusal.status}).encode("utf-8")
        kind = "application/json; charset=UTF-8"
    else:
        body = f"{refusal.status} {refusal.reason}: {refusal.message}\n".encode()
        kind = "text/plain; charset=UTF-8"
    lines = [f"HTTP/1.1 {refusal.status} {refusal.reason}", f"Content-Type: {kind}", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in {**extra_headers, **dict(refusal.headers)}.items()]
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


#: A refused connection is closed gently (its answer sent, then what the client still sends read and
#: dropped, so the close does not reset the answer away): for at most this long and this much, and for
#: at most this many connections at once (the rest are closed at once).
LINGER_SECONDS = 2.0
LINGER_BYTES = 256 * 1024
MAX_LINGERING = 16


class _Closer:
    """Answers refused connections and closes them, gently while few others are being closed so."""

    def __init__(self) -> None:
        self.lingering = 0  # only changed on the server's event loop

    def answer(self, stream: tornado.iostream.IOStream, data: bytes) -> None:
        def settled(done: Any) -> None:
            done.exception()  # retrieved: an error here is the client's going away, nothing to report

        IOLoop.current().add_future(gen.convert_yielded(self._answer(stream, data)), settled)

    async def _answer(self, stream: tornado.iostream.IOStream, data: bytes) -> None:
        gentle = self.lingering < MAX_LINGERING
        self.lingering += gentle
        try:
            await stream.write(data)
            if not gentle:
                return
            stream.socket.shutdown(socket.SHUT_WR)
            deadline = IOLoop.current().time() + LINGER_SECONDS
            drained = 0
            while drained < LINGER_BYTES:
                chunk = await gen.with_timeout(
                    deadline,
                    stream.read_bytes(65536, partial=True),
                    quiet_exceptions=(tornado.iostream.StreamClosedError,),
                )
                drained += len(chunk)
        except (tornado.iostream.StreamClosedError, TimeoutError, OSError):
            pass
        finally:
            self.lingering -= gentle
            stream.close()


def head_refusal(start: bytes) -> Refusal:
    """The answer to a request whose head outgrew ``MAX_HEADER_BYTES``, from the head's first bytes: 414 when
    the request line alone does not end within the bound, else 431 (the headers are too large)."""
    head = start[: MAX_HEADER_BYTES + 2].lstrip(b"\r\n")
    if b"\n" not in head[: MAX_HEADER_BYTES + 1]:
        return Refusal(414, "URI Too Long", f"the request line may be at most {MAX_HEADER_BYTES} bytes")
    return Refusal(
        431,
        "Request Header Fields Too Large",
        f"the request line and headers may be at most {MAX_HEADER_BYTES} bytes together",
    )


class _HeadStream(tornado.iostream.IOStream):
    """A connection's stream that, when a request's head outgrows Tornado's bound, is answered instead of dropped.

    Tornado closes the stream when the head does not end within ``max_header_size`` (an unsatisfiable
    read), so the client sees the connection drop with no status. Here that close keeps a duplicate of the
    socket and hands it, with the head's first bytes, to ``on_long_head``, which answers 414 or 431 on it.
    """

    on_long_head: Callable[[tornado.iostream.IOStream, bytes], None] | None = None

    def close(self, exc_info: Any = False) -> None:
        hook = self.on_long_head
        overflow = isinstance(exc_info, tornado.iostream.UnsatisfiableReadError) and self._read_regex is not None
        if hook is None or not overflow or self.closed():
            super().close(exc_info)
            return
        self.on_long_head = None
        start = bytes(self._read_buffer[: MAX_HEADER_BYTES + 2])  # the unread head: its first line decides
        try:
            kept: socket.socket | None = self.socket.dup()
        except OSError:
            kept = None  # out of descriptors: dropped as before
        super().close(exc_info)
        if kept is not None:
            hook(tornado.iostream.IOStream(kept), start)


class GuardedHTTPServer(tornado.httpserver.HTTPServer):
    """Tornado's server with a connection cap, a screen before the body, and a calm accept loop.

    At the cap, a new connection pushes out the oldest connection (by when it was accepted) of those waiting on
    their client: for a request's headers (a slow or idle one, or a kept-alive one between its requests), for
    the rest of a request's body (a body sent a byte a second, which needs no token: a sign-in form, a
    webhook's unsigned POST), to read an answer, or with its next requests already in (a client that pipelines
    requests and reads nothing kept its connection busy for ever), so slow or chatty sockets cannot lock the
    owner out. Its age counts, not how long it has waited now: a kept-alive connection sending a small request
    every few tenths of a second never waited long and held its place for ever. One accepted less than
    ``PUSH_OUT_AFTER_SECONDS`` ago is not pushed out (new ones wait in the backlog); only when every
    connection's request is being handled is the new one answered 503 and closed.
    """

    limits: ServerLimits
    screen: Screen
    security_headers: dict[str, str]

    def guard(self, limits: ServerLimits, screen: Screen, security_headers: dict[str, str]) -> None:
        """Set the bounds (call once, before ``add_sockets``)."""
        self.limits, self.screen, self.security_headers = limits, screen, security_headers
        self._accepted: dict[HTTP1ServerConnection, float] = {}  # every live connection: when it was accepted
        # The connections waiting on their client (a request's head, or the rest of its body): when accepted.
        self._waiting: dict[HTTP1ServerConnection, float] = {}
        self.closer = _Closer()
        self._accept_trouble = _Reporter(60.0)

    # -- connections -------------------------------------------------------------

    def _live(self) -> int:
        return sum(1 for conn in self._connections if not conn.stream.closed())

    def push_out_wait(self) -> float:
        """Seconds until a new connection may be accepted: 0 below the cap, or when the oldest one waiting on
        its client has had its time, or when none waits (the new one is answered 503)."""
        if self._live() < self.limits.max_connections:
            return 0.0
        since = min(self._on_client().values(), default=None)
        return 0.0 if since is None else max(0.0, since + PUSH_OUT_AFTER_SECONDS - time.monotonic())

    def _on_client(self) -> dict[HTTP1ServerConnection, float]:
        """The connections waiting on their client, when each was accepted: for a request's head or body, for the
        client to read what was written (its answer not yet taken by the socket), or sending requests before
        reading the answers (pipelined requests already in, which no browser or HTTP library sends: the server
        would work through them one by one, busy at every instant)."""
        reading = {conn: at for conn, at in self._accepted.items() if _pushing(conn.stream)}
        return reading | self._waiting

    def handle_stream(self, stream: tornado.iostream.IOStream, address: Any) -> None:
        if self._live() >= self.limits.max_connections:
            waiting = self._on_client()
            victim = min(waiting, key=waiting.__getitem__, default=None)
            if victim is None:
                busy = Refusal(503, "Service Unavailable", "the page is busy; try again", (("Retry-After", "5"),))
                self.closer.answer(stream, raw_response(busy, self.security_headers, json_body=False))
                return
            self._waiting.pop(victim, None)
            self._accepted.pop(victim, None)
            victim.stream.close()  # its descriptor is free at once; Tornado forgets it when its loop ends
        super().handle_stream(stream, address)
        # Waiting from the start: until its first request's headers are in, it may be pushed out.
        now = time.monotonic()
        for conn in self._connections:
            if conn.stream is stream:
                self._accepted[conn] = self._waiting[conn] = now

    def start_request(self, server_conn: object, request_conn: tornado.httputil.HTTPConnection) -> Any:
        if server_conn in self._accepted:  # waiting for the next request's headers (again: kept alive)
            self._waiting[server_conn] = self._accepted[server_conn]
        return _Screened(self, server_conn, request_conn, super().start_request(server_conn, request_conn))

    def on_close(self, server_conn: object) -> None:
        self._waiting.pop(server_conn, None)  # type: ignore[call-overload]
        self._accepted.pop(server_conn, None)  # type: ignore[call-overload]
        super().on_close(server_conn)

    def busy(self, server_conn: object) -> None:
        """Its request is being handled (or refused): it no longer waits on its client."""
        self._waiting.pop(server_conn, None)  # type: ignore[call-overload]

    def _serve(self, connection: socket.socket, address: Any) -> None:
        """Tornado's ``_handle_connection`` (no TLS here), on a stream whose over-long heads are answered."""
        stream = _HeadStream(connection, max_buffer_size=self.max_buffer_size, read_chunk_size=self.read_chunk_size)
        stream.on_long_head = self._answer_long_head
        self.handle_stream(stream, address)

    def _answer_long_head(self, stream: tornado.iostream.IOStream, start: bytes) -> None:
        refusal = head_refusal(start)
        target = start.lstrip(b"\r\n").split(b" ", 2)[1:2]
        log.info("%d: a request's head over %d bytes (refused)", refusal.status, MAX_HEADER_BYTES)
        wants_json = bool(target) and target[0].startswith(b"/api/")
        self.closer.answer(stream, raw_response(refusal, self.security_headers, json_body=wants_json))

    # -- accepting ---------------------------------------------------------------

    def add_sockets(self, sockets: Any) -> None:
        for sock in sockets:
            self._sockets[sock.fileno()] = sock
            self._handlers[sock.fileno()] = self._accept_on(sock)

    def _accept_on(self, sock: socket.socket) -> Callable[[], None]:
        """Tornado's accept handler, except that running out of descriptors pauses it (logged once a minute)."""
        loop = IOLoop.current()
        state = {"removed": False, "paused": False}

        def accept(fd: Any, events: int) -> None:
            for _ in range(ACCEPT_BATCH):
                if state["removed"]:
                    return
                wait = self.push_out_wait()
                if wait > 0:  # the rest stay in the backlog till the longest idle connection had its time
                    pause(wait)
                    return
                try:
                    connection, address = sock.accept()
                except BlockingIOError:
                    return
                except ConnectionAbortedError:
                    continue
                except OSError as exc:
                    if exc.errno not in ACCEPT_ERRORS:
                        raise
                    self._accept_trouble.report(
                        "web page: cannot accept connections: %s (%s); pausing %.1f s",
                        exc.strerror,
                        errno.errorcode.get(exc.errno or 0, "?"),
                        ACCEPT_PAUSE_SECONDS,
                    )
                    pause(ACCEPT_PAUSE_SECONDS)
                    return
                self._serve(connection, address)

        def pause(seconds: float) -> None:
            state["paused"] = True
            loop.remove_handler(sock)
            loop.call_later(seconds, resume)

        def resume() -> None:
            if not state["removed"] and state["paused"]:
                state["paused"] = False
                loop.add_handler(sock, accept, IOLoop.READ)

        def remove() -> None:
            if not state["paused"]:
                loop.remove_handler(sock)
            state["removed"] = True

        loop.add_handler(sock, accept, IOLoop.READ)
        return remove


def _pushing(stream: tornado.iostream.IOStream) -> bool:
    """An answer waits for the client to read it, or the client's next requests wait in the buffer (the stream's
    ``_read_buffer_size``: Tornado keeps no public count of it)."""
    return stream.writing() or stream._read_buffer_size > 0


class _Screened(tornado.httputil.HTTPMessageDelegate):
    """Screens each request on its headers before Tornado reads its body; the rest goes to the app."""

    def __init__(
        self,
        server: GuardedHTTPServer,
        server_conn: object,
        request_conn: tornado.httputil.HTTPConnection,
        inner: tornado.httputil.HTTPMessageDelegate,
    ) -> None:
        self.server, self.server_conn, self.request_conn, self.inner = server, server_conn, request_conn, inner

    def headers_received(
        self,
        start_line: tornado.httputil.RequestStartLine | tornado.httputil.ResponseStartLine,
        headers: tornado.httputil.HTTPHeaders,
    ) -> Any:
        assert isinstance(start_line, tornado.httputil.RequestStartLine)
        peer = str(getattr(getattr(self.request_conn, "context", None), "remote_ip", ""))
        refusal = self.server.screen(start_line, headers, peer)
        if refusal is None:  # it waits on its client for its body still: busy once the body is in (finish)
            return self.inner.headers_received(start_line, headers)
        self.server.busy(self.server_conn)
        log.info("%d %s %s (refused from its headers)", refusal.status, start_line.method, start_line.path[:200])
        assert isinstance(self.request_conn, HTTP1Connection)
        stream = self.request_conn.detach()  # Tornado stops here: the body is never read
        wants_json = start_line.path.startswith("/api/") or "application/json" in headers.get("Accept", "")
        self.server.closer.answer(stream, raw_response(refusal, self.server.security_headers, json_body=wants_json))
        return None

    def data_received(self, chunk: bytes) -> Any:
        return self.inner.data_received(chunk)

    def finish(self) -> None:
        self.server.busy(self.server_conn)
        self.inner.finish()

    def on_connection_close(self) -> None:
        self.inner.on_connection_close()


class _Reporter:
    """Logs a recurring problem at most once per ``interval`` seconds, with how often it happened meanwhile."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval, self.clock = interval, clock
        self._last: float | None = None
        self._since = 0

    def report(self, message: str, *args: object) -> None:
        now = self.clock()
        if self._last is not None and now - self._last < self.interval:
            self._since += 1
            return
        more = f" (and {self._since} more times since the last report)" if self._since else ""
        log.error(message + more, *args)
        self._last, self._since = now, 0


def http_server(app: Any, limits: ServerLimits, screen: Screen, security_headers: dict[str, str]) -> GuardedHTTPServer:
    """The guarded server for ``app`` with Tornado's own bounds set from ``limits``."""
    server = GuardedHTTPServer(
        app,
        xheaders=False,
        max_header_size=MAX_HEADER_BYTES,
        max_body_size=limits.max_body_bytes,
        max_buffer_size=limits.max_body_bytes + MAX_HEADER_BYTES,
        idle_connection_timeout=limits.header_timeout_seconds,  # Tornado's wait for each request's headers
        body_timeout=limits.body_timeout_seconds,
    )
    server.guard(limits, screen, security_headers)
    return server
