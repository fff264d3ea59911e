"""One deadline for a whole HTTP exchange: from taking a connection to the body's last byte.

`requests`' ``timeout`` bounds each socket operation, so a server that sends a little before each
read times out never: a header line at a time, whitespace keep-alives before a JSON body (some
hosted model APIs do that for requests that are not streamed), comments in an event stream, or a
body delimited by closing the connection that never closes. Such a server holds the caller as
long as it likes. Two parts close that for the bot's HTTP reads made with ``requests`` (the model runners,
embeddings, speech, transcription, the collectors' fetch, the web skill, web_search's SearXNG, Brave and
Tavily, the calendar skill's CalDAV client, ``hooks test``; docs/architecture.md names the clients that do not
use it):

- ``Deadline``: ``with Deadline(seconds):`` around a request. Sessions from ``deadline_session``
  (or any session with a ``DeadlineAdapter`` mounted) hand the connection they use to the deadline
  active in the calling thread; when it passes, one watchdog thread shuts the connection's socket
  down, so a read blocked on the headers or the body returns at once. A connection given back to
  the pool is forgotten first, so the watchdog never touches a connection another call now uses.
- ``read_body``: reads a streamed response in pieces, each read given at most the time left (also
  bounded on a session without the adapter), up to a size cap; ``DeadlineExceeded`` carries what
  had arrived. A body that "ends" because the watchdog shut the socket is a deadline, not an end.

The TLS handshake of a new connection is bounded by the connect timeout per read only (the socket
is not reachable before the handshake is done).
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from dataclasses import dataclass, field
from http.cookiejar import DefaultCookiePolicy
from typing import Any, Self

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

READ_SIZE = 64 * 1024


class DeadlineExceeded(Exception):
    """The exchange's deadline passed; ``partial`` is the part of the body that had arrived."""

    def __init__(self, seconds: float, partial: bytes = b"") -> None:
        super().__init__(f"not finished within {seconds:g} s")
        self.seconds = seconds
        self.partial = partial


class BodyTooLarge(Exception):
    """The body passed the caller's size cap (it was not read further)."""

    def __init__(self, max_bytes: int, partial: bytes = b"") -> None:
        super().__init__(f"the answer is larger than {max_bytes} bytes")
        self.max_bytes = max_bytes
        self.partial = partial  # what was read, a little past the cap


_current = threading.local()


def current() -> Deadline | None:
    """The innermost deadline active in this thread, if any."""
    stack = getattr(_current, "stack", None)
    return stack[-1] if stack else None


class Deadline:
    """``seconds`` from now for everything a request does in this thread (``with`` block)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.at = time.monotonic() + self.seconds
        self.fired = False  # the watchdog shut the exchange's connections down
        self.done = False
        self._watched: list[tuple[object, socket.socket | None]] = []
        self._lock = threading.Lock()

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.at - time.monotonic())

    @property
    def expired(self) -> bool:
        """True once the deadline has passed (whether or not a read was cut by it)."""
        return self.fired or self.remaining() <= 0

    def __enter__(self) -> Self:
        stack = getattr(_current, "stack", None)
        if stack is None:
            stack = _current.stack = []
        stack.append(self)
        _WATCHDOG.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.done = True
            self._watched.clear()
        stack = getattr(_current, "stack", [])
        if self in stack:
            stack.remove(self)

    def watch(self, connection: object, sock: socket.socket | None = None) -> None:
        """Shut ``connection``'s socket (or ``sock``, the one it answers on) down at the deadline; at
        once when it has passed."""
        with self._lock:
            if self.done:
                return
            if not self.fired:
                self._watched.append((connection, sock))
                return
        _shut(connection, sock)

    def forget(self, connection: object) -> None:
        """``connection`` goes back to the pool: the watchdog must not touch it (or its socket) any more."""
        with self._lock:
            self._watched = [(c, s) for c, s in self._watched if c is not connection]

    def fire(self) -> None:
        """Called by the watchdog at the deadline."""
        with self._lock:
            if self.done:
                return
            self.fired = True
            watched, self._watched = self._watched, []
            # Shut down under the lock: a connection forgotten (returned to the pool) after this
            # point was already cut, so no other call can pick it up still open.
            for connection, sock in watched:
                _shut(connection, sock)


def _shut(connection: object, sock: socket.socket | None) -> None:
    sock = sock or getattr(connection, "sock", None)
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)  # a recv blocked in another thread returns at once
    except OSError:
        pass


class _Watchdog:
    """One daemon thread firing deadlines in time order."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, deadline: Deadline) -> None:
        with self._cond:
            if len(self._heap) > 256:  # drop finished ones now and then (they would leave at their time)
                self._heap = [entry for entry in self._heap if not entry[2].done]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="http-deadline-watchdog", daemon=True)
                self._thread.start()
            elif self._heap[0][2] is deadline:
                # Woken only when this deadline comes first: otherwise the thread already waits for an earlier
                # one (a finished call's stays until its time) and plans again then. Each call woke it before.
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                deadline = heapq.heappop(self._heap)[2]
            deadline.fire()


_WATCHDOG = _Watchdog()


class _WatchedConnection:
    """Connection mixin: the socket an answer arrives on is watched too. http.client detaches it from
    the connection (``sock = None``) for a body delimited by closing the connection."""

    sock: socket.socket | None

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        deadline = getattr(self, "_exchange_deadline", None)
        if deadline is not None and self.sock is not None:
            deadline.watch(self, self.sock)
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class _WatchedHTTPConnection(_WatchedConnection, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_WatchedConnection, HTTPSConnection):
    pass


class _WatchedPool:
    """Pool mixin: a connection taken in a thread with an active deadline is watched by it until
    it is given back."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        connection = super()._get_conn(timeout)  # type: ignore[misc]
        deadline = current()
        if connection is not None:
            connection._exchange_deadline = deadline
            if deadline is not None:
                deadline.watch(connection)
        return connection

    def _put_conn(self, conn: Any) -> None:
        deadline = getattr(conn, "_exchange_deadline", None)
        if deadline is not None:
            deadline.forget(conn)
            conn._exchange_deadline = None
        super()._put_conn(conn)  # type: ignore[misc]


class _WatchedHTTPPool(_WatchedPool, HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(_WatchedPool, HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class DeadlineAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` whose connections are cut when the calling thread's ``Deadline`` passes."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):  # SOCKS managers bring their own connection classes
            manager.pool_classes_by_scheme = _POOLS
        return manager


def deadline_session(pool_size: int = 10) -> requests.Session:
    """A ``requests.Session`` whose requests obey the thread's ``Deadline``; it keeps no cookies
    (one server's cookie must not ride along on another caller's request)."""
    session = requests.Session()
    session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    adapter = DeadlineAdapter(pool_maxsize=max(1, pool_size))
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def limit_socket(raw: object, remaining: float) -> None:
    """Give the next socket read of a streamed urllib3 response at most ``remaining`` seconds."""
    sock = getattr(getattr(raw, "_connection", None), "sock", None)
    if sock is None:
        fp = getattr(getattr(getattr(raw, "_fp", None), "fp", None), "raw", None)
        sock = getattr(fp, "_sock", None)
    if sock is not None:
        try:
            sock.settimeout(max(0.01, remaining))
        except OSError:
            pass


def read_body(response: requests.Response, deadline: Deadline, *, max_bytes: int) -> bytes:
    """The (decoded) body of a ``stream=True`` response, read until ``deadline`` and ``max_bytes``.

    Raises ``DeadlineExceeded`` (with what arrived), ``BodyTooLarge``, or what the transport raised.
    """
    chunks: list[bytes] = []
    size = 0
    raw = response.raw
    reader = getattr(raw, "read1", None)
    while True:
        remaining = deadline.remaining()
        if remaining <= 0:
            raise DeadlineExceeded(deadline.seconds, b"".join(chunks))
        limit_socket(raw, remaining)
        try:
            # read1 returns after one socket read; read(n) would wait for n bytes of a slow drip.
            chunk = reader(READ_SIZE, decode_content=True) if reader else raw.read(READ_SIZE, decode_content=True)
        except Exception:
            if deadline.expired:
                raise DeadlineExceeded(deadline.seconds, b"".join(chunks)) from None
            raise
        if not chunk:
            if deadline.fired:  # the watchdog's shutdown reads as an end of body: it is not one
                raise DeadlineExceeded(deadline.seconds, b"".join(chunks))
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLarge(max_bytes, b"".join(chunks))


@dataclass
class Answer:
    """One bounded HTTP answer: status, lower-case headers, the body, the final URL."""

    status: int
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes = b""

    def json(self) -> Any:
        """The body parsed as JSON (ValueError when it is not)."""
        import json

        return json.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


def bounded_request(
    session: requests.Session, method: str, url: str, *, seconds: float, max_bytes: int, **kwargs: Any
) -> Answer:
    """One request whose whole exchange (connect to last byte) ends within ``seconds``.

    ``kwargs`` go to ``session.request`` (``timeout`` defaults to ``seconds`` per operation).
    Raises ``DeadlineExceeded``, ``BodyTooLarge`` or a ``requests.RequestException``.
    """
    kwargs.setdefault("timeout", seconds)
    with Deadline(seconds) as deadline:
        try:
            response = session.request(method, url, stream=True, **kwargs)
        except requests.RequestException:
            if deadline.expired:
                raise DeadlineExceeded(seconds) from None
            raise
        if deadline.fired:  # cut in the headers: http.client takes the cut for their end
            response.close()
            raise DeadlineExceeded(seconds)
        with response:
            answer = Answer(
                status=response.status_code,
                url=response.url or url,
                headers={k.lower(): v for k, v in response.headers.items()},
            )
            answer.content = read_body(response, deadline, max_bytes=max_bytes)
    return answer
