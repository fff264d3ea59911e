"""A static HTTP server on 127.0.0.1 for feed and calendar tests (stdlib only).

Usage::

    with StaticHTTPServer() as server:
        server.add("/news.xml", rss_bytes, content_type="application/rss+xml", etag='"v1"')
        url = server.url("/news.xml")
        ...
        assert server.requests[-1].headers["If-None-Match"] == '"v1"'

A route with an ``etag`` or ``last_modified`` answers 304 to a matching
conditional request. ``status`` serves an error; ``delay`` waits before answering;
``drip`` sends the body one byte at a time, ``drip`` seconds apart (a slow server).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Route:
    body: bytes
    content_type: str = "application/octet-stream"
    status: int = 200
    etag: str | None = None
    last_modified: str | None = None
    delay: float = 0.0
    drip: float = 0.0


@dataclass
class SeenRequest:
    method: str
    path: str
    headers: dict = field(default_factory=dict)
    status: int = 0


class StaticHTTPServer:
    """Serves registered byte bodies; records every request."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[SeenRequest] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add(self, path: str, body: bytes | str, **options) -> None:
        data = body.encode("utf-8") if isinstance(body, str) else body
        with self._lock:
            self.routes[path] = Route(body=data, **options)

    def url(self, path: str) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{path}"

    def requests_to(self, path: str) -> list[SeenRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def start(self) -> "StaticHTTPServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                path = self.path.split("?", 1)[0]
                with server._lock:
                    route = server.routes.get(path)
                    seen = SeenRequest("GET", path, {k: v for k, v in self.headers.items()})
                    server.requests.append(seen)
                if route is None:
                    seen.status = 404
                    self._send(404, b"not found", "text/plain", {})
                    return
                if route.delay:
                    time.sleep(route.delay)
                headers = {}
                if route.etag:
                    headers["ETag"] = route.etag
                if route.last_modified:
                    headers["Last-Modified"] = route.last_modified
                inm = self.headers.get("If-None-Match")
                ims = self.headers.get("If-Modified-Since")
                if route.status == 200 and ((route.etag and inm == route.etag) or (route.last_modified and ims == route.last_modified)):
                    seen.status = 304
                    self._send(304, b"", None, headers)
                    return
                seen.status = route.status
                if route.drip:
                    self._drip(route)
                    return
                self._send(route.status, route.body, route.content_type, headers)

            def _drip(self, route: Route) -> None:
                self.send_response(route.status)
                self.send_header("Content-Type", route.content_type)
                self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                try:
                    for i in range(len(route.body)):
                        self.wfile.write(route.body[i : i + 1])
                        self.wfile.flush()
                        if server._httpd is None:
                            return
                        time.sleep(route.drip)
                except OSError:
                    pass  # the client gave up: that is what a drip test expects

            def _send(self, status: int, body: bytes, content_type: str | None, headers: dict) -> None:
                self.send_response(status)
                if content_type:
                    self.send_header("Content-Type", content_type)
                for key, value in headers.items():
                    self.send_header(key, value)
                if status != 304:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if status != 304:
                    self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="static-http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "StaticHTTPServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
