"""A real SMTP server on 127.0.0.1 for tests: aiosmtpd's Controller (its own thread and event loop),
keeping every message it receives.

Usage::

    with FakeSMTPServer() as server:
        ... smtplib.SMTP("127.0.0.1", server.port) ...
        [message] = server.messages      # email.message.EmailMessage, as received

``security`` is "plain" (no TLS), "starttls" (STARTTLS required before MAIL) or "tls" (implicit TLS, SMTPS);
the TLS modes need ``cert_file``/``key_file`` (tests/certs.py makes a CA and a certificate for 127.0.0.1).
"""

from __future__ import annotations

import email
import email.policy
import socket
import ssl
import threading
from email.message import EmailMessage
from pathlib import Path
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
    """An SMTP server without login on a free loopback port; without TLS unless ``security`` says so."""

    def __init__(self, *, security: str = "plain", cert_file: Path | None = None, key_file: Path | None = None) -> None:
        if security not in ("plain", "starttls", "tls"):
            raise ValueError(f"FakeSMTPServer security {security!r}: expected plain, starttls or tls")
        if security != "plain" and not (cert_file and key_file):
            raise ValueError(f"FakeSMTPServer security {security!r} needs cert_file and key_file")
        self.security = security
        self._tls: ssl.SSLContext | None = None
        if cert_file and key_file:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(str(cert_file), str(key_file))
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
        tls: dict[str, Any] = {}
        if self.security == "tls":
            tls = {"ssl_context": self._tls}
        elif self.security == "starttls":
            tls = {"tls_context": self._tls, "require_starttls": True}
        self._controller = Controller(_Keep(self), hostname="127.0.0.1", port=self.port, **tls)
        self._controller.start()  # returns when the server answers
        return self

    def __exit__(self, *exc: object) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def clear(self) -> None:
        """Forget what was received (a module's server, emptied for the next test)."""
        with self._lock:
            self.messages.clear()
            self.recipients.clear()
