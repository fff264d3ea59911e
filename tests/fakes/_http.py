"""HTTP plumbing shared by the fake servers (chat_server, signal_daemon, bot_api): stdlib only.

The house rule for fakes: answer like the real thing and add no delay of their own. So every
connection is keep-alive (HTTP/1.1) and TCP_NODELAY, and every answer leaves in one write: the
headers and the body go through a buffered ``wfile`` that the stdlib flushes once per request
(a chunk of a stream flushes itself). Without that, separate header and body writes stall
~40 ms per call (Nagle + delayed ACK).

- ``FakeServer``: a ``ThreadingHTTPServer`` on 127.0.0.1 serving in a daemon thread (``start``),
  with a deep listen backlog, quiet about clients that hang up, remembering its open connections
  and dropping them on ``stop``; ``fake`` is the fake object its handlers reach; ``tls`` (a server context)
  makes it serve https.
- ``FakeHandler``: the request handler base: ``read_body``, ``send``/``send_json`` (one answer),
  ``start_chunked``/``send_chunk`` (a chunked stream, e.g. server-sent events), ``deliver`` (one answer, at
  once or trickled slowly), ``guard``.
- ``multipart_parts``: the parts of a ``multipart/form-data`` body.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import selectors
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

# What a client that gives up (timeout, closed stream, abandoned long poll) raises in a handler.
DISCONNECTS = (BrokenPipeError, ConnectionResetError, socket.timeout)


class FakeServer(ThreadingHTTPServer):
    """A threading HTTP server on 127.0.0.1:``port`` (0: a free one) whose handlers reach ``fake``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], fake: Any, port: int = 0, *, backlog: int = 256) -> None:
        self.fake = fake
        # Bursts of clients connect at once; a backlog of 5 (the default) makes them retry (~1 s).
        self.request_queue_size = backlog
        self.connections: set[socket.socket] = set()  # open (keep-alive) connections
        self._connections_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping, self._stopped = threading.Event(), threading.Event()
        self._wake_read, self._wake_write = socket.socketpair()  # shutdown's nudge to the loop
        try:
            super().__init__(("127.0.0.1", port), handler)
        except BaseException:
            self._wake_read.close()
            self._wake_write.close()
            raise

    #: A server context: every connection is TLS (the handshake in the connection's own thread).
    tls: ssl.SSLContext | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            return super().finish_request(request, client_address)
        with self.tls.wrap_socket(request, server_side=True) as tls:  # the plain socket is left without its fd
            super().finish_request(tls, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up (timeouts, closed streams, a bot stopping) are normal here

    def track(self, conn: socket.socket, alive: bool) -> None:
        with self._connections_lock:
            (self.connections.add if alive else self.connections.discard)(conn)

    def start(self, name: str) -> "FakeServer":
        """Serve in a daemon thread called ``name``."""
        self._thread = threading.Thread(target=self.serve_forever, name=name, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """The stdlib's loop, woken by ``shutdown`` instead of seeing its flag at the next poll: a stop (every
        test's teardown, of every fake it started) takes no poll interval's wait, and an idle fake no CPU."""
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wake_read, selectors.EVENT_READ)
            while not self._stopping.is_set():
                ready = selector.select()
                if self._stopping.is_set():
                    break
                if any(key.fileobj is self for key, _ in ready):
                    self._handle_request_noblock()
                self.service_actions()
        self._stopped.set()

    def shutdown(self) -> None:
        """Stop the loop and wait until it ended (at once if it never ran)."""
        self._stopping.set()
        self._wake_write.send(b"x")
        if self._thread is not None:
            self._stopped.wait()

    def server_close(self) -> None:
        super().server_close()
        self._wake_read.close()
        self._wake_write.close()

    def stop(self) -> None:
        """Stop serving and drop open connections (later requests get connection refused)."""
        self.shutdown()
        self.server_close()
        with self._connections_lock:
            connections = list(self.connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)


class FakeHandler(BaseHTTPRequestHandler):
    """Request handler base of the fakes: keep-alive, TCP_NODELAY, one write per answer, quiet."""

    protocol_version = "HTTP/1.1"
    timeout = 30  # idle keep-alive connections end instead of living forever
    disable_nagle_algorithm = True  # TCP_NODELAY, as real servers set
    wbufsize = 1 << 16  # headers and body in one write: flushed once per request (or per chunk)
    # The Server header; None: the stdlib's ("BaseHTTP/0.6 Python/3.x") followed by a Date header.
    server_header: str | None = None
    server: FakeServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def send_response(self, code: int, message: str | None = None) -> None:
        if self.server_header is None:
            super().send_response(code, message)
            return
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Server", self.server_header)  # and no Date header

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send(
        self,
        status: int,
        body: bytes = b"",
        content_type: str | None = None,
        headers: dict | list[tuple[str, str]] | None = None,
    ) -> None:
        """One answer: status line, Server (and Date), Content-Type (unless None), Content-Length, ``headers``
        (a dict, or (name, value) pairs where a name may repeat)."""
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items() if isinstance(headers, dict) else headers or []:
            self.send_header(key, str(value))
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, status: int, obj: Any, headers: dict | None = None) -> None:
        self.send(status, json.dumps(obj).encode("utf-8"), "application/json", headers)

    #: The answer's body ends by closing the connection (no length, no chunks), as some servers send.
    close_framed = False

    def start_chunked(self, content_type: str, headers: dict | None = None) -> None:
        """The head of a 200 chunked answer (or, ``close_framed``, one ended by closing the connection);
        it leaves with the first ``send_chunk`` (or a ``wfile.flush()``)."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        if self.close_framed:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, data: bytes) -> None:
        """Write one chunk now (with anything buffered before it); ``b""`` ends the body (closing the
        connection ends a ``close_framed`` one, after the handler returns)."""
        if self.close_framed:
            if data:
                self.wfile.write(data)
                self.wfile.flush()
            return
        self.wfile.write(f"{len(data):X}\r\n".encode("ascii") + data + b"\r\n")
        self.wfile.flush()

    def deliver(self, status: int, payload: bytes, content_type: str, trickle: dict | None = None) -> None:
        """One answer, sent at once or, with a ``trickle`` spec (chat_server.py's module docstring says its keys),
        slowly."""
        if not trickle:
            self.send(status, payload, content_type)
            return
        every, until = float(trickle.get("every", 0.1)), time.monotonic() + float(trickle.get("for", 0))
        if trickle.get("where") == "head":
            self.close_connection = True
            self.wfile.write(f"HTTP/1.1 {status} OK\r\n".encode("ascii"))
            self.wfile.flush()
            self.wfile.write(b"X-Wait: ")
            while time.monotonic() < until:  # one header line, a byte at a time (http.client allows 64 KB)
                time.sleep(every)
                self.wfile.write(b".")
                self.wfile.flush()
            head = f"\r\nContent-Type: {content_type}\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
            self.wfile.write(head.encode("ascii") + payload)
            return
        self.close_framed = trickle.get("framing") == "close"
        self.start_chunked(content_type)
        self.wfile.flush()
        while time.monotonic() < until:
            time.sleep(every)
            self.send_chunk(b" \n")
        self.send_chunk(payload)
        self.send_chunk(b"")

    def guard(self, fn: Callable[[], None], errors: type[BaseException] | tuple = DISCONNECTS) -> None:
        """Run ``fn``; a client gone away (``errors``) just ends the connection."""
        try:
            fn()
        except errors:
            self.close_connection = True


def multipart_parts(content_type: str, body: bytes) -> list[tuple[str | None, str | None, str, bytes]]:
    """``(field name, file name or None, content type, payload)`` of each part of a multipart body."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1") + body
    )
    return [
        (
            part.get_param("name", header="content-disposition"),
            part.get_filename(),
            part.get_content_type(),
            part.get_payload(decode=True) or b"",
        )
        for part in message.iter_parts()
    ]
