"""A static HTTP server on 127.0.0.1 for feed and calendar tests (stdlib only).

Usage::

    with StaticHTTPServer() as server:
        server.add("/news.xml", rss_bytes, content_type="application/rss+xml", etag='"v1"')
        url = server.url("/news.xml")
        ...
        assert server.requests[-1].headers["If-None-Match"] == '"v1"'

A route with an ``etag`` or ``last_modified`` answers 304 to a matching
conditional request. ``status`` serves an error; ``delay`` waits before answering;
``drip`` sends the body one byte at a time, ``drip`` seconds apart (a slow server);
``framing="close"`` leaves the length out of a dripped body (it ends when the connection closes);
``hold`` (a ``threading.Event``) with ``drip``: the head and the body's first byte are sent, the rest only
once the test sets the event (a body in flight for as long as the test needs, not for a guessed time).
``drip_head`` sends the status line, then a header line one byte every ``drip_head`` seconds (10,000
bytes) before the rest: a server trickling its headers. ``headers`` adds answer headers (a cookie a
page on another port sets, say).

Every method is served the same way (its body read and dropped): a CalDAV client's PROPFIND or REPORT, a
hook's POST, to a dripping route, is a slow server for them too; ``SeenRequest.method`` says which came.

The plumbing is ``tests.fakes._http`` (HTTP/1.1 keep-alive, TCP_NODELAY, each answer in
one write); ``requests`` records requests, not connections.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from tests.fakes._http import FakeHandler, FakeServer


@dataclass
class Route:
    body: bytes
    content_type: str = "application/octet-stream"
    status: int = 200
    etag: str | None = None
    last_modified: str | None = None
    delay: float = 0.0
    drip: float = 0.0
    framing: str = "length"
    drip_head: float = 0.0
    #: With ``drip``: the body's bytes after the first wait until this is set (at most 30 s).
    hold: threading.Event | None = None
    #: More answer headers as (name, value) pairs: a name may repeat (two ``Set-Cookie``).
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class SeenRequest:
    method: str
    path: str
    headers: dict = field(default_factory=dict)
    status: int = 0


class _Handler(FakeHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        fake: StaticHTTPServer = self.server.fake
        path = self.path.split("?", 1)[0]
        with fake._lock:
            route = fake.routes.get(path)
            seen = SeenRequest(self.command, path, {k: v for k, v in self.headers.items()})
            fake.requests.append(seen)
        if route is None:
            seen.status = 404
            self.send(404, b"not found", "text/plain")
            return
        if route.delay:
            time.sleep(route.delay)
        headers = list(route.headers)
        if route.etag:
            headers.append(("ETag", route.etag))
        if route.last_modified:
            headers.append(("Last-Modified", route.last_modified))
        inm = self.headers.get("If-None-Match")
        ims = self.headers.get("If-Modified-Since")
        if route.status == 200 and (
            (route.etag and inm == route.etag) or (route.last_modified and ims == route.last_modified)
        ):
            seen.status = 304
            self._not_modified(headers)
            return
        seen.status = route.status
        if route.drip_head:
            self.guard(lambda: self._drip_head(route), OSError)
            return
        if route.drip:
            self.guard(lambda: self._drip(route), OSError)  # the client giving up is what a drip test expects
            return
        self.send(route.status, route.body, route.content_type or None, headers)

    def _any_method(self) -> None:
        self.read_body()
        self.do_GET()

    do_POST = do_PUT = do_PROPFIND = do_REPORT = _any_method  # noqa: N815 - http.server naming

    def _not_modified(self, headers: list[tuple[str, str]]) -> None:
        # As before: no Content-Type, no Content-Length, no body (a 304 ends at its headers in HTTP/1.1 too).
        self.send_response(304)
        for key, value in headers:
            self.send_header(key, value)
        self.end_headers()

    def _drip(self, route: Route) -> None:
        # The head leaves with the first byte (one write); then one write per byte, ``drip`` seconds apart.
        self.send_response(route.status)
        self.send_header("Content-Type", route.content_type)
        if route.framing == "close":
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(route.body)))
        self.end_headers()
        for i in range(len(route.body)):
            self.wfile.write(route.body[i : i + 1])
            self.wfile.flush()
            if self.server.fake._server is None:  # stopped: end the connection
                self.close_connection = True
                return
            if i == 0 and route.hold is not None:
                route.hold.wait(30)
            time.sleep(route.drip)

    def _drip_head(self, route: Route) -> None:
        self.close_connection = True
        self.wfile.write(f"HTTP/1.1 {route.status} OK\r\n".encode("ascii"))
        self.wfile.flush()
        self.wfile.write(b"X-Wait: ")
        for _ in range(10_000):  # one long header line, a byte at a time (http.client allows 64 KB)
            if self.server.fake._server is None:
                return
            time.sleep(route.drip_head)
            self.wfile.write(b".")
            self.wfile.flush()
        head = f"\r\nContent-Type: {route.content_type}\r\nContent-Length: {len(route.body)}\r\n\r\n"
        self.wfile.write(head.encode("ascii") + route.body)


class StaticHTTPServer:
    """Serves registered byte bodies; records every request."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[SeenRequest] = []
        self._lock = threading.Lock()
        self._server: FakeServer | None = None

    def add(self, path: str, body: bytes | str, **options) -> None:
        data = body.encode("utf-8") if isinstance(body, str) else body
        with self._lock:
            self.routes[path] = Route(body=data, **options)

    def url(self, path: str) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def requests_to(self, path: str) -> list[SeenRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def start(self) -> "StaticHTTPServer":
        self._server = FakeServer(_Handler, self).start("static-http")
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> "StaticHTTPServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
