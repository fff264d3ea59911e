"""A real IMAP server on 127.0.0.1 for tests: pymap's in-memory (dict) backend in a thread.

Usage::

    with FakeIMAPServer(user="alice", password="secret") as server:
        uid = server.append("INBOX", raw_message_bytes)
        server.create_folder("Work")
        server.recreate_folder("INBOX")        # new UIDVALIDITY, old messages gone
        ... imaplib.IMAP4("127.0.0.1", server.port) ...

``security`` is "plain" (no TLS), "starttls" (STARTTLS required before LOGIN) or
"tls" (implicit TLS); the TLS modes need ``cert_file``/``key_file`` (see
:func:`make_self_signed_cert`, or tests/certs.py with ``ca_file``, the CA the test's own client trusts).
Messages are added with real IMAP APPENDs.
"""

from __future__ import annotations

import argparse
import asyncio
import imaplib
import shutil
import socket
import ssl
import subprocess
import threading
from pathlib import Path

from proxyprotocol.reader import ProxyProtocolReader
from pymap.backend.dict import Config, DictBackend, Login
from pymap.imap import IMAPServer
from pysasl.hashing import Cleartext


class _QuietConfig(Config):
    @property
    def greeting(self) -> bytes:
        # The default looks up the host's FQDN, which can stall offline.
        return b"Server ready fake-imap"


def make_self_signed_cert(folder: Path) -> tuple[Path, Path] | None:
    """A certificate for 127.0.0.1 made with the openssl binary; None when it is missing."""
    openssl = shutil.which("openssl")
    if not openssl:
        return None
    cert, key = folder / "imap-cert.pem", folder / "imap-key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


class FakeIMAPServer:
    """pymap serving one user from memory on an ephemeral loopback port."""

    def __init__(
        self,
        user: str = "alice",
        password: str = "secret",
        *,
        security: str = "plain",
        cert_file: Path | None = None,
        key_file: Path | None = None,
        ca_file: Path | None = None,
    ) -> None:
        if security not in ("plain", "starttls", "tls"):
            raise ValueError(f"FakeIMAPServer security {security!r}: expected plain, starttls or tls")
        if security != "plain" and not cert_file:
            raise ValueError(f"FakeIMAPServer security {security!r} needs cert_file and key_file")
        self.user = user
        self.password = password
        self.security = security
        self.cert_file = cert_file
        self.key_file = key_file
        self.ca_file = ca_file or cert_file  # a self-signed certificate is its own CA
        self.host = "127.0.0.1"
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> "FakeIMAPServer":
        self._thread = threading.Thread(target=self._serve, name="fake-imap", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("fake IMAP server did not start within 30 s")
        if self._error is not None:
            raise RuntimeError(f"fake IMAP server failed to start: {self._error}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop_event is not None:
            self._loop.call_soon_threadsafe(self._stop_event.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> "FakeIMAPServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # noqa: BLE001 - surfaced by start()
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _main(self) -> None:
        args = argparse.Namespace(
            passlib_cfg=None,
            proxy_protocol=None,
            debug=False,
            host=self.host,
            port=0,
            cert=str(self.cert_file) if self.cert_file else None,
            key=str(self.key_file) if self.key_file else None,
            tls=self.security == "starttls",
            demo_data=False,
            demo_user=self.user,
            demo_password=self.password,
            inherited_sockets=None,
        )
        # Cleartext: 500k pbkdf2 rounds per LOGIN would make every test connection slow.
        config = _QuietConfig.from_args(args, invalid_user_sleep=0.0, hash_context=Cleartext())
        login = Login(config)
        await DictBackend._add_demo_user(config, login)
        config.apply_context()
        handler = ProxyProtocolReader(config.proxy_protocol).get_callback(IMAPServer(login, config))
        server_ssl = None
        if self.security == "tls":
            server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            server_ssl.load_cert_chain(str(self.cert_file), str(self.key_file))
        server = await asyncio.start_server(handler, host=self.host, port=0, ssl=server_ssl)
        self.port = server.sockets[0].getsockname()[1]
        self._stop_event = asyncio.Event()
        self._ready.set()
        async with server:
            await self._stop_event.wait()

    # -- seeding through real IMAP commands ------------------------------------

    def client(self) -> imaplib.IMAP4:
        """A logged-in imaplib client (the test's own, for seeding)."""
        if self.security == "tls":
            ctx = ssl.create_default_context(cafile=str(self.ca_file))
            conn: imaplib.IMAP4 = imaplib.IMAP4_SSL(self.host, self.port, ssl_context=ctx, timeout=10)
        else:
            conn = imaplib.IMAP4(self.host, self.port, timeout=10)
            if self.security == "starttls":
                conn.starttls(ssl.create_default_context(cafile=str(self.ca_file)))
        # imaplib's APPEND writes the literal after the server's "+" in small pieces: without TCP_NODELAY each
        # APPEND waited for a delayed ACK (~45 ms on Linux loopback; 1 ms with it).
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.login(self.user, self.password)
        return conn

    def append(self, folder: str, message: bytes, flags: str = "", date_time: object = None) -> int:
        """APPEND one RFC 822 message (``date_time``: its INTERNALDATE, a datetime); returns its UID."""
        conn = self.client()
        try:
            status, data = conn.append(_quote(folder), f"({flags})" if flags else None, date_time, message)
            if status != "OK":
                raise RuntimeError(f"APPEND to {folder!r} failed: {data!r}")
            # "[APPENDUID <uidvalidity> <uid>] APPEND completed."
            return int(data[0].split(b"]")[0].split()[-1])
        finally:
            conn.logout()

    def create_folder(self, folder: str) -> None:
        conn = self.client()
        try:
            status, data = conn.create(_quote(folder))
            if status != "OK":
                raise RuntimeError(f"CREATE {folder!r} failed: {data!r}")
        finally:
            conn.logout()

    def recreate_folder(self, folder: str) -> None:
        """Empty a folder and give it a new UIDVALIDITY (as a server rebuild would)."""
        conn = self.client()
        try:
            conn.select(_quote(folder))
            conn.store("1:*", "+FLAGS", "(\\Deleted)")
            conn.expunge()
            conn.close()
            if folder.upper() != "INBOX":
                conn.delete(_quote(folder))
                conn.create(_quote(folder))
        finally:
            conn.logout()

    def uidvalidity(self, folder: str) -> int:
        conn = self.client()
        try:
            conn.select(_quote(folder), readonly=True)
            return int(conn.response("UIDVALIDITY")[1][0])
        finally:
            conn.logout()


def _quote(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'
