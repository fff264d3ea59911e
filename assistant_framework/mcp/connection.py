"""One MCP server: started (or connected to) through the official SDK, its tools listed, calls made,
watched, restarted with backoff when it dies, and stopped (``aclose``).

A supervisor task on the shared loop owns the connection: it opens the transport (stdio: the SDK
starts the command as a child process with only the configured environment; streamable HTTP: the
URL with the configured headers), lists the tools, then watches the connection (a ``tools/list`` every
``PING_SECONDS``, at once when a call lost the connection or timed out, and before a call after
``IDLE_PING_SECONDS`` of quiet). When the connection is
lost it logs one warning for the outage, restarts with a backoff doubling from ``FIRST_BACKOFF`` to
``MAX_BACKOFF`` seconds, and one line more when the server answers again. A server that never
started is not retried: its error is what ``skills list`` and ``doctor`` show, until ``/reload``.

``start`` and ``call`` come from other threads; every failure is a ``ToolError`` with one sentence.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import deque
from contextlib import AsyncExitStack
from typing import TextIO

import httpx2
from mcp import Client, Implementation, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CONNECTION_CLOSED, CallToolResult, Tool

from assistant_framework.config.settings import ServerSettings
from assistant_framework.json_types import JsonObject
from assistant_framework.mcp.bounds import (
    EVENT_TOO_LARGE,
    EVENT_TOO_LARGE_SAID,
    MAX_EVENT_BYTES,
    STREAM_TOO_LARGE,
    TOO_LARGE,
    bound_event_stream,
    bound_json_answer,
)
from assistant_framework.mcp.loop import LoopThread
from assistant_framework.mcp.results import ToolError, first_sentence
from assistant_framework.mcp.status import ServerStatus
from assistant_framework.mcp.stdio import ServerOutput, bounded_stdio_client
from assistant_framework.mcp.strays import MARK, end_marked, new_mark
from assistant_framework.redaction import redact_text
from assistant_framework.tls import shared_httpx2_context

log = logging.getLogger(__name__)

FIRST_BACKOFF = 1.0
MAX_BACKOFF = 60.0
PING_SECONDS = 30.0
PING_TIMEOUT = 10.0
#: A call after this long without an answer pings first (a server that died idle is restarted, not blamed).
IDLE_PING_SECONDS = 5.0
#: How long past its call's time bound an answer's event stream is still read (then it is ended: bounds.py).
ANSWER_STREAM_MARGIN = 1.0
#: Tools kept of one server (pages of ``tools/list`` read at most ``MAX_PAGES``).
MAX_TOOLS = 200
MAX_PAGES = 20
CLIENT = Implementation(name="assistant-framework", version="0.1")


class StderrTail:
    """The last lines a stdio server wrote to its stderr (kept in memory, logged at DEBUG): the
    reason a server gives for not starting, without a file that grows."""

    KEEP = 20
    LINE_BYTES = 2000
    #: How long a failed start waits for the reader to reach the end of an ended server's stderr.
    DRAIN_SECONDS = 5.0

    def __init__(self, name: str) -> None:
        self.name = name
        self._lines: deque[str] = deque(maxlen=self.KEEP)
        self._lock = threading.Lock()
        self._drained = threading.Event()

    def open(self) -> TextIO:
        """A new pipe for one start of the server: its write end (for the child), read by a thread."""
        with self._lock:
            self._lines.clear()  # what an earlier run said is no reason for this one
        drained = self._drained = threading.Event()
        read_fd, write_fd = os.pipe()
        reader = threading.Thread(
            target=self._read, args=(read_fd, drained), name=f"mcp-{self.name}-stderr", daemon=True
        )
        reader.start()
        return os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")

    def _read(self, fd: int, drained: threading.Event) -> None:
        with os.fdopen(fd, "rb") as pipe:
            while True:
                line = pipe.readline(self.LINE_BYTES)
                if not line:
                    drained.set()
                    return
                text = line.decode("utf-8", "replace").rstrip()
                if text:  # the bot's log formatter hides the config's secrets; what is shown, _with_stderr
                    log.debug("mcp server %r says: %s", self.name, text)
                    with self._lock:
                        self._lines.append(text)

    def drain(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s) until the reader has read all an ended server wrote: a server that
        exits at once is seen gone before its last line has crossed the pipe, on a loaded machine."""
        self._drained.wait(timeout)

    def last(self) -> str:
        with self._lock:
            return self._lines[-1] if self._lines else ""


async def _probe(client: Client) -> None:
    """Is the server there? ``tools/list`` (the 2026-07-28 protocol has no ping; every server lists tools)."""
    await client.list_tools()


def restart_delay(tries: int) -> float:
    """The wait before a restart after ``tries`` failed ones in a row: ``FIRST_BACKOFF`` doubling up to
    ``MAX_BACKOFF`` (both read now: the delay of an outage is the one set when it happens)."""
    return min(FIRST_BACKOFF * (1 << min(tries, 32)), MAX_BACKOFF)


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups, as anyio's task groups raise them."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class ServerConnection:
    """One configured server on the shared loop. ``start``, ``call`` and ``close`` are called from
    other threads; everything else runs on the loop."""

    def __init__(self, settings: ServerSettings, loop: LoopThread) -> None:
        self.settings = settings
        self._loop = loop
        #: Its URL's password and token, its secret headers and environment: never in an error, a log line or
        #: what the model reads (a server or its HTTP library may quote the URL it was given).
        self._secrets = settings.secrets
        self._stderr = StderrTail(settings.name)
        self._output = ServerOutput()
        self._client: Client | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._wake: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._lost = False
        self._last_answer = 0.0
        self.tools: list[Tool] = []
        self.answered = False
        self.error = ""
        self.restarts = 0

    @property
    def name(self) -> str:
        return self.settings.name

    # -- from other threads ----------------------------------------------------------------------

    def start(self) -> list[Tool]:
        """Start the server and list its tools (waits up to the server's timeout); ToolError says why not."""
        timeout = self.settings.timeout
        try:
            return self._loop.call(self._start(), timeout + 10)
        except TimeoutError:
            raise ToolError(f"did not answer within {timeout:g} s", own_words=True) from None
        except ToolError as exc:
            raise ToolError(self.without_secrets(str(exc)), own_words=exc.own_words) from None

    def call(self, tool: str, arguments: JsonObject) -> CallToolResult:
        """One ``tools/call``: the SDK's result, or ToolError (one sentence) when the call did not work."""
        timeout = self.settings.timeout
        try:
            return self._loop.call(self._call(tool, arguments, timeout), timeout + 5)
        except TimeoutError:
            raise ToolError(
                f"the MCP server {self.name!r} did not answer within {timeout:g} s", own_words=True
            ) from None
        except ToolError as exc:  # the server's own words too: it may quote what it was sent
            raise ToolError(self.without_secrets(str(exc)), own_words=exc.own_words) from None

    def without_secrets(self, text: str) -> str:
        """``text`` with this server's secrets (and runs of 8+ of their characters) as ``***``."""
        return redact_text(text, self._secrets)

    def status(self) -> ServerStatus:
        s = self.settings
        return ServerStatus(s.name, s.transport, s.where, self.answered, len(self.tools), self.error, self.restarts)

    # -- on the loop --------------------------------------------------------------------------------

    async def _start(self) -> list[Tool]:
        if self._supervisor is None:
            self._ready, self._wake, self._stop = asyncio.Event(), asyncio.Event(), asyncio.Event()
            first: asyncio.Future[list[Tool]] = asyncio.get_running_loop().create_future()
            self._supervisor = asyncio.create_task(self._supervise(first), name=f"mcp-{self.name}")
            await first
        elif not self.answered:
            raise ToolError(self.error or "did not start")
        return self.tools

    async def aclose(self, timeout: float) -> None:
        """Stop the server, on the loop (a stdio child is ended by the SDK: stdin closed, then terminated,
        then killed); a server that does not stop within ``timeout`` is abandoned with a warning."""
        if self._supervisor is None or self._stop is None or self._wake is None:
            return
        self._stop.set()
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._supervisor), timeout)
        except (TimeoutError, asyncio.CancelledError):
            log.warning("mcp server %r did not stop within %g s", self.name, timeout)
            self._supervisor.cancel()
        except Exception:  # noqa: BLE001 - stopping: the error was reported when it happened
            pass

    async def _supervise(self, first: asyncio.Future[list[Tool]]) -> None:
        assert self._stop is not None
        tries = 0  # restarts tried since the server last answered
        outage: float | None = None
        while not self._stop.is_set():
            started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            session = asyncio.create_task(self._session(started), name=f"mcp-{self.name}-session")
            error = await self._until_started(session, started)
            if not error:
                if not first.done():
                    first.set_result(self.tools)
                if outage is not None:
                    log.info(
                        "mcp server %r answers again after %.0f s (%d restarts)",
                        self.name,
                        time.monotonic() - outage,
                        self.restarts,
                    )
                    outage = None
                tries = 0
                error = await self._until_ended(session)
            if self._stop.is_set():
                break
            self.error = error
            if not first.done():  # never started: the owner fixes the config, then /reload
                self.answered = False
                first.set_exception(ToolError(error))
                return
            if outage is None:
                outage = time.monotonic()
                log.warning(
                    "mcp server %r stopped answering (%s); restarting it, waiting up to %g s between tries "
                    "(said once per outage)",
                    self.name,
                    error,
                    MAX_BACKOFF,
                )
            try:
                await asyncio.wait_for(self._stop.wait(), restart_delay(tries))
            except TimeoutError:
                pass
            tries += 1
            self.restarts += 1

    async def _until_started(self, session: asyncio.Task[None], started: asyncio.Future[None]) -> str:
        """ "" once the session listed the tools, else why it did not (the session is over then)."""
        timeout = self.settings.timeout
        done, _ = await asyncio.wait({session, started}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if started in done:
            return ""
        if session in done:
            return await self._with_stderr(self._why(session))
        session.cancel()
        await asyncio.gather(session, return_exceptions=True)
        return await self._with_stderr(f"did not answer within {timeout:g} s")

    async def _until_ended(self, session: asyncio.Task[None]) -> str:
        await asyncio.gather(session, return_exceptions=True)
        return self._why(session)

    def _why(self, session: asyncio.Task[None]) -> str:
        if session.cancelled():
            return "stopped"
        exc = session.exception()
        return self._describe(exc) if exc is not None else "the connection ended"

    async def _with_stderr(self, error: str) -> str:
        """A start failure with the last line the server wrote to stderr (its own reason, often), once the
        reader has it: the session is over, so the pipe's write ends are closed or closing."""
        if self.settings.transport != "stdio":
            return self.without_secrets(error)
        await asyncio.to_thread(self._stderr.drain, StderrTail.DRAIN_SECONDS)
        last = self._stderr.last()
        return self.without_secrets(f"{error} (its last output: {first_sentence(last, 200)})" if last else error)

    def _describe(self, exc: BaseException) -> str:
        """Why ``exc`` ended a connection or a call, in one sentence without the server's secrets (an HTTP
        error quotes the URL it was sent to)."""
        return self.without_secrets(self._cause(exc))

    def _cause(self, exc: BaseException) -> str:
        leaf = _leaf(exc)
        if isinstance(leaf, FileNotFoundError):
            return f"the command {self.settings.command!r} was not found"
        if isinstance(leaf, PermissionError):
            return f"the command {self.settings.command!r} may not be run ({leaf.strerror})"
        if isinstance(leaf, MCPError):
            if leaf.code == CONNECTION_CLOSED and self._output.refused:
                return f"the connection was ended: {self._output.refused}"
            if leaf.code == CONNECTION_CLOSED:
                return "the server closed the connection" + (
                    " (it exited)" if self.settings.transport == "stdio" else ""
                )
            return first_sentence(leaf.message)
        if isinstance(leaf, ToolError):
            return str(leaf)
        if isinstance(leaf, httpx2.HTTPError) or "connect" in type(leaf).__name__.lower():
            return f"{self.settings.where} is not reachable ({type(leaf).__name__}: {first_sentence(str(leaf), 160)})"
        return first_sentence(f"{type(leaf).__name__}: {leaf}")

    async def _open(self, stack: AsyncExitStack) -> Client:
        s = self.settings
        if s.url:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    # An answer is read within its bounds (bounds.py), unpacked here: none is asked for packed.
                    headers={"Accept-Encoding": "identity", **s.headers},
                    event_hooks={"response": [bound_json_answer, bound_event_stream(s.timeout + ANSWER_STREAM_MARGIN)]},
                    timeout=httpx2.Timeout(s.timeout, read=300),
                    verify=shared_httpx2_context(),  # not a context made per connection
                )
            )
            transport = streamable_http_client(s.url, http_client=http, max_sse_event_size=MAX_EVENT_BYTES)
            return await stack.enter_async_context(Client(transport, client_info=CLIENT, cache=None))
        errlog = self._stderr.open()
        stack.callback(errlog.close)
        # Runs after the SDK ended the server (the stack unwinds last in, first out): what it started and
        # took out of its process group (setsid, a double fork) is found by the mark and ended too.
        mark = new_mark()
        stack.push_async_callback(asyncio.to_thread, end_marked, mark)
        env = {**s.env, MARK: mark}
        params = StdioServerParameters(command=s.command, args=list(s.args), env=env, cwd=s.cwd or None)
        self._output = ServerOutput()
        client = await stack.enter_async_context(
            Client(bounded_stdio_client(params, errlog, self._output), client_info=CLIENT, cache=None)
        )
        errlog.close()  # the child has its own copy: the reader sees the end when the child exits
        return client

    async def _list_tools(self, client: Client) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += list(page.tools)
            cursor = page.next_cursor
            if not cursor or len(tools) >= MAX_TOOLS:
                break
        if len(tools) > MAX_TOOLS:
            log.warning("mcp server %r lists %d tools; the first %d are used", self.name, len(tools), MAX_TOOLS)
        return tools[:MAX_TOOLS]

    async def _session(self, started: asyncio.Future[None]) -> None:
        """One connection: open, list, then watch until it is lost or the server is stopped."""
        assert self._ready is not None and self._wake is not None and self._stop is not None
        async with AsyncExitStack() as stack:
            client = await self._open(stack)
            tools = await self._list_tools(client)
            self._client, self.tools, self.answered, self.error = client, tools, True, ""
            self._lost = False
            self._last_answer = time.monotonic()
            self._ready.set()
            started.set_result(None)
            try:
                await self._watch(client)
            finally:
                self._ready.clear()
                self._client = None

    async def _watch(self, client: Client) -> None:
        assert self._wake is not None and self._stop is not None
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._wake.wait(), PING_SECONDS)
            except TimeoutError:
                pass
            self._wake.clear()
            if self._stop.is_set():
                return
            if self._lost:
                raise ToolError("the connection was lost during a call", own_words=True)
            try:
                await asyncio.wait_for(_probe(client), PING_TIMEOUT)
            except Exception as exc:  # noqa: BLE001 - any failure means the server is gone or stuck
                raise ToolError(f"it did not answer ({self._describe(exc)})") from None
            self._last_answer = time.monotonic()

    def _mark_lost(self, client: Client) -> None:
        """The connection ``client`` belongs to is gone: no call may use it, the watcher restarts it."""
        assert self._ready is not None and self._wake is not None
        if self._client is client:
            self._lost = True
            self._ready.clear()
            self._client = None
            self._wake.set()

    async def _ready_client(self, deadline: float, timeout: float) -> Client:
        assert self._ready is not None
        try:
            await asyncio.wait_for(self._ready.wait(), max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            raise ToolError(
                f"the MCP server {self.name!r} is restarting and did not answer within {timeout:g} s"
                + (f" ({self.error})" if self.error else "")
            ) from None
        if self._client is None:
            raise ToolError(f"the MCP server {self.name!r} is restarting: try again in a moment", own_words=True)
        return self._client

    async def _call(self, tool: str, arguments: JsonObject, timeout: float) -> CallToolResult:
        assert self._wake is not None
        if self._supervisor is None or self._supervisor.done():
            raise ToolError(f"the MCP server {self.name!r} is not running ({self.error or 'stopped'})")
        deadline = time.monotonic() + timeout
        client = await self._ready_client(deadline, timeout)
        if time.monotonic() - self._last_answer > IDLE_PING_SECONDS:
            # A server that died while idle is found now, not by the call: the call then waits for the
            # restart instead of failing (it never reached the server).
            try:
                await asyncio.wait_for(_probe(client), min(PING_TIMEOUT, max(0.1, deadline - time.monotonic())))
            except Exception:  # noqa: BLE001 - any failure: restart, then call
                self._mark_lost(client)
                client = await self._ready_client(deadline, timeout)
        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments), max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            self._wake.set()  # the watcher pings it: a stuck server is restarted
            raise ToolError(
                f"the MCP server {self.name!r} did not answer within {timeout:g} s", own_words=True
            ) from None
        except MCPError as exc:
            if exc.code != CONNECTION_CLOSED and TOO_LARGE in exc.message:  # bounds.py's words, quoted by the SDK
                raise ToolError(
                    f"the MCP server {self.name!r} sent {TOO_LARGE}; it was not read", own_words=True
                ) from None
            # The answer's event stream ended at a bound (bounds.py: the SDK's per event, ours in all).
            for words, said in ((EVENT_TOO_LARGE, EVENT_TOO_LARGE_SAID), (STREAM_TOO_LARGE, STREAM_TOO_LARGE)):
                if words in exc.message:
                    raise ToolError(
                        f"the MCP server {self.name!r} sent {said}; it was not read", own_words=True
                    ) from None
            if exc.code != CONNECTION_CLOSED:
                raise ToolError(
                    f"the MCP server {self.name!r} refused the call: {first_sentence(exc.message)}"
                ) from None
            self._mark_lost(client)
            why = f" ({self._output.refused})" if self._output.refused else ""
            raise ToolError(
                f"the MCP server {self.name!r} stopped during the call{why}; it is being restarted: try again",
                own_words=True,
            ) from None
        except Exception as exc:  # noqa: BLE001 - a transport failure: the connection is gone
            self._mark_lost(client)
            raise ToolError(
                f"the MCP server {self.name!r} stopped during the call ({self._describe(exc)}); it is being "
                "restarted: try again"
            ) from None
        self._last_answer = time.monotonic()
        return result
