"""The HTTP listener of a channel whose platform posts to the bot (Telegram's and WhatsApp's webhooks, Slack's
request URL): Tornado on the channel's own event loop, bounded like the hooks listener (connections, the body's
size read from ``Content-Length`` before it is read, header and body timeouts), the page's security headers on
every answer."""

from __future__ import annotations

import socket

import tornado.netutil
import tornado.web

from assistant_framework.hooks.listener import screen
from assistant_framework.web import logbudget
from assistant_framework.web.base import SECURITY_HEADERS
from assistant_framework.web.limits import GuardedHTTPServer, ServerLimits, http_server

MAX_CONNECTIONS = 32


class PlainHandler(tornado.web.RequestHandler):
    """A handler that answers in plain text, with the security headers."""

    def set_default_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.set_header(name, value)

    def _answer(self, status: int, text: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(text)


class WebhookListener:
    """``handler`` on ``path`` at ``listen``:``port``; ``start()`` on the channel's running loop (it serves
    there), ``stop()`` on it too."""

    def __init__(
        self,
        listen: str,
        port: int,
        path: str,
        handler: type[tornado.web.RequestHandler],
        handler_args: dict[str, object],
        max_body_bytes: int,
    ) -> None:
        self.host, self.port, self.path = listen, port, path
        self.limits = ServerLimits(
            max_connections=MAX_CONNECTIONS,
            max_body_bytes=max_body_bytes,
            header_timeout_seconds=10.0,
            body_timeout_seconds=30.0,
        )
        self.app = tornado.web.Application([(path, handler, handler_args)])
        # The server's lines and the handler's own (its module's logger): each kind 20 a minute, as the page's.
        self.loggers = (*logbudget.SERVER_LOGGERS, handler.__module__)
        self._server: GuardedHTTPServer | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"

    def start(self) -> None:
        """Listen; raises OSError when the address cannot be bound."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sockets = tornado.netutil.bind_sockets(self.port, self.host, family=family)
        self.port = sockets[0].getsockname()[1]
        logbudget.install(loggers=self.loggers)
        self._server = http_server(self.app, self.limits, screen(self.limits), SECURITY_HEADERS)
        self._server.add_sockets(sockets)

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
