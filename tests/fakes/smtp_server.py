"""A real SMTP server on 127.0.0.1 for tests: aiosmtpd's Controller (its own thread and event loop),
keeping every message it receives.

Usage::

    with FakeSMTPServer() as server:
        ... smtplib.SMTP("127.0.0.1", server.port) ...
        [message] = server.messages      # email.message.EmailMessage, as received
"""

from __future__ import annotations

import email
import email.policy
import socket
import threading
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller


class _Keep:
    def __init__(self, owner: FakeSMTPServer) -> None:
        self._owner = owner

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        with self._owner._lock:
            self._owner.messages.append(message)
            self._owner.recipients.append(list(envelope.rcpt_tos))
        return "250 Message accepted for delivery"


class FakeSMTPServer:
    """An SMTP server without TLS or login on a free loopback port."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.recipients: list[list[str]] = []
        self._lock = threading.Lock()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        # Made when started, not here: the Controller opens its event loop as it is made and closes it only in
        # stop(), so a server made and never started (a port nobody listens on) left an unclosed loop for the
        # garbage collector to find during some later test of the same worker (issue 41).
        self._controller: Controller | None = None

    def __enter__(self) -> FakeSMTPServer:
        self._controller = Controller(_Keep(self), hostname="127.0.0.1", port=self.port)
        self._controller.start()  # returns when the server answers
        return self

    def __exit__(self, *exc: object) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None
