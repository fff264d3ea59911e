"""The served endpoints on the web server (``assistant web``, or the bot's page): a client's bearer token first,
then the MCP server at ``/mcp``.

``ClientHandler`` answers 401 before anything runs when no configured client's token is given, counts a wrong
token against the page's bound on wrong tokens (429 beyond it), and takes no cookie: the page's session is not
a client, and no CSRF check is needed where only a bearer token opens the door. ``/mcp`` hands the request to
the caller's own MCP server (the SDK's streamable HTTP app, stateless, JSON answers) through a small ASGI call.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from typing import TYPE_CHECKING, Any

import tornado.web

from assistant_framework.serve.clients import Client, PerMinute, client_for
from assistant_framework.serve.memory_tools import Caller, MemoryTools
from assistant_framework.web.auth import bearer_of
from assistant_framework.web.base import SECURITY_HEADERS, WebState
from assistant_framework.web.server import Mount

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.types import ASGIApp, Message, Scope

log = logging.getLogger(__name__)

Route = tuple[str, type[tornado.web.RequestHandler], dict[str, object]]

NO_CLIENT = "a configured client's bearer token is required (serve.clients; docs/serve.md)"


class ClientHandler(tornado.web.RequestHandler):
    """A request from a configured client (``self.client``), or 401 before anything runs."""

    client: Client

    def initialize(self, state: WebState, clients: tuple[Client, ...], **_: object) -> None:
        self.state = state
        self.clients = clients

    def set_default_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.set_header(name, value)

    def check_xsrf_cookie(self) -> None:
        """Only a bearer token opens these endpoints; no cookie is read, so a cross-site form has nothing to use."""

    def prepare(self) -> None:
        header = self.request.headers.get("Authorization")
        found = client_for(self.clients, header)
        if found is None:
            if bearer_of(header):
                wait = self.state.throttle.wrong(
                    self.state.clients.client(self.request.remote_ip or "", self.request.headers)
                )
                if wait > 0:
                    self.set_header("Retry-After", str(math.ceil(wait)))
                    self.refuse(429, "too many wrong tokens lately")
                    return
            self.set_header("WWW-Authenticate", 'Bearer realm="assistant"')
            self.refuse(401, NO_CLIENT)
            return
        self.client = found

    def refuse(self, status: int, message: str) -> None:
        """An answer in the OpenAI error shape (which MCP clients show as text too); ends the request."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": status}}))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        reason = self._reason if status_code < 500 else "the server failed to answer; see the log"
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": {"message": reason, "type": "server_error", "code": status_code}}))


class McpServers:
    """One MCP server per client, started on first use on the web server's event loop and kept running."""

    def __init__(self, tools: MemoryTools, per_minute: PerMinute) -> None:
        self.tools = tools
        self.per_minute = per_minute
        self._apps: dict[str, ASGIApp] = {}
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []

    async def app_for(self, client: Client) -> ASGIApp:
        async with self._lock:
            app = self._apps.get(client.name)
            if app is None:
                # The MCP SDK imported at a client's first call, not with the web server: it costs half a
                # second of CPU, and most bots serve no MCP client.
                from mcp.server.transport_security import TransportSecuritySettings

                from assistant_framework.serve.mcp_server import memory_server

                server = memory_server(self.tools, Caller(client.name, client.write), self.per_minute)
                app = server.streamable_http_app(
                    streamable_http_path="/mcp",
                    json_response=True,
                    stateless_http=True,
                    # The web server's screen checks the Host (DNS rebinding) before this is reached.
                    transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
                )
                await self._start(server)
                self._apps[client.name] = app
            return app

    async def _start(self, server: MCPServer) -> None:
        """Run the server's session manager in a task of its own (its task group outlives any request)."""
        started = asyncio.Event()

        async def run() -> None:
            async with server.session_manager.run():
                started.set()
                await asyncio.Event().wait()

        self._tasks.append(asyncio.get_running_loop().create_task(run()))
        await started.wait()


class McpHandler(ClientHandler):
    """``/mcp``: the client's own MCP server (streamable HTTP)."""

    def initialize(self, state: WebState, clients: tuple[Client, ...], servers: McpServers, **_: object) -> None:  # type: ignore[override]
        super().initialize(state, clients)
        self.servers = servers

    async def post(self) -> None:
        await self._asgi()

    async def get(self) -> None:
        await self._asgi()

    async def delete(self) -> None:
        await self._asgi()

    async def _asgi(self) -> None:
        app = await self.servers.app_for(self.client)
        request = self.request
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": (request.query or "").encode("latin-1"),
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.get_all()],
            "client": (request.remote_ip or "", 0),
            "server": ("127.0.0.1", 0),
        }
        body_sent = False
        done = asyncio.Event()

        async def receive() -> Message:
            nonlocal body_sent
            if not body_sent:
                body_sent = True
                return {"type": "http.request", "body": request.body or b"", "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.set_status(message["status"])
                for key, value in message.get("headers", []):
                    name = key.decode("latin-1")
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.set_header(name, value.decode("latin-1"))
            elif message["type"] == "http.response.body":
                self.write(message.get("body", b""))
                if not message.get("more_body"):
                    done.set()

        try:
            await app(scope, receive, send)
        finally:
            done.set()
        if not self._finished:
            self.finish()


def mcp_mount(clients: tuple[Client, ...], tools: MemoryTools, per_minute: PerMinute) -> Mount:
    """The ``/mcp`` route for the web server."""
    servers = McpServers(tools, per_minute)

    def routes(state: WebState) -> list[Route]:
        return [(r"/mcp/?", McpHandler, {"state": state, "clients": clients, "servers": servers})]

    return routes
