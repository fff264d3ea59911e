"""IMAP access for the mail collector: connect (TLS, STARTTLS or plain), list new UIDs, fetch."""

from __future__ import annotations

import base64
import binascii
import imaplib
import os
import re
import socket
import ssl
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from assistant_framework.collectors.spec import CollectorConfig
from assistant_framework.tls import system_context

from .records import FolderCursor

DEFAULT_PORTS = {"tls": 993, "starttls": 143, "plain": 143}


class MailConfigError(ValueError):
    """The mail config cannot work (missing host, password, ...); names the key."""


@dataclass
class FolderBatch:
    """What a folder holds beyond the cursor: its UIDVALIDITY and new (uid, raw message) pairs."""

    folder: str
    uidvalidity: int
    messages: list[tuple[int, bytes]]
    reset: bool  # UIDVALIDITY changed: the old cursor no longer applies
    received: dict[int, datetime] = field(default_factory=dict)  # uid -> INTERNALDATE (when the server sent it)


_INTERNALDATE = re.compile(rb'INTERNALDATE "([^"]+)"')


def internaldate(parts: list[Any]) -> datetime | None:
    """The INTERNALDATE of a FETCH answer (it may come before or after the literal); None if absent."""
    for piece in parts or []:
        for chunk in piece if isinstance(piece, tuple) else (piece,):
            if not isinstance(chunk, bytes) or b"INTERNALDATE" not in chunk[:400] + chunk[-400:]:
                continue
            match = _INTERNALDATE.search(chunk[:400]) or _INTERNALDATE.search(chunk[-400:])
            if match:
                try:
                    return datetime.strptime(match.group(1).decode("ascii").strip(), "%d-%b-%Y %H:%M:%S %z")
                except ValueError:
                    return None
    return None


def password_from(config: CollectorConfig) -> str:
    """The IMAP password from ``password_env`` (preferred) or ``password``."""
    env_name = config.get("password_env")
    if env_name:
        value = os.environ.get(env_name)
        if not value:
            raise MailConfigError(f"collectors.mail.password_env: environment variable {env_name} is not set")
        return value
    if config.get("password"):
        return str(config["password"])
    raise MailConfigError("collectors.mail: no password: set password_env (an environment variable name) or password")


def ssl_context(config: CollectorConfig) -> ssl.SSLContext:
    """The process's context for ``ca_file`` (assistant_framework/tls.py), or one that verifies nothing."""
    if config.get("tls_verify", True) is False:
        # Only for a local server with a self-made certificate, by explicit config.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    return system_context(config.get("ca_file") or "")


#: A run's time, and so its IMAP session's: a server that answers a byte at a time (no read waits out the socket
#: timeout) has its connection cut then, so the run's thread ends with the run (the runner abandons the run at
#: the same time, and would not start the collector again while the thread talks on).
RUN_SECONDS = 300.0


class _Session:
    """An IMAP connection cut at a deadline from its start, whatever the server sends meanwhile."""

    def __init__(self, *args: Any, session_seconds: float, **kwargs: Any) -> None:
        self._session_seconds = session_seconds
        self.session_timer: threading.Timer | None = None
        try:
            super().__init__(*args, **kwargs)
        except BaseException:
            self.cancel_deadline()
            raise

    def cancel_deadline(self) -> None:
        if self.session_timer is not None:
            self.session_timer.cancel()

    def _create_socket(self, timeout: float | None) -> socket.socket:
        sock: socket.socket = super()._create_socket(timeout)  # type: ignore[misc]
        self.session_timer = threading.Timer(self._session_seconds, _cut, args=(sock,))
        self.session_timer.daemon = True
        self.session_timer.start()
        return sock


class _IMAP(_Session, imaplib.IMAP4):
    pass


class _IMAPSSL(_Session, imaplib.IMAP4_SSL):
    pass


def _cut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # the read in progress returns; the next ones fail
    except OSError:
        pass


def connect(config: CollectorConfig) -> imaplib.IMAP4:
    """A logged-in connection; errors name the host and never include the password."""
    host = config.get("host")
    if not host:
        raise MailConfigError("collectors.mail.host is not set")
    security = config.get("security", "tls")
    port = int(config.get("port") or DEFAULT_PORTS[security])
    timeout = float(config.get("connect_timeout_seconds", 30))
    session = float(config.get("timeout_seconds") or RUN_SECONDS)
    password = password_from(config)
    try:
        if security == "tls":
            conn: imaplib.IMAP4 = _IMAPSSL(
                host, port, ssl_context=ssl_context(config), timeout=timeout, session_seconds=session
            )
        else:
            conn = _IMAP(host, port, timeout=timeout, session_seconds=session)
            if security == "starttls":
                conn.starttls(ssl_context(config))
    except (OSError, imaplib.IMAP4.error) as exc:
        raise ConnectionError(f"IMAP {host}:{port} ({security}): cannot connect: {exc}") from None
    try:
        conn.login(config.get("username") or "", password)
    except imaplib.IMAP4.error as exc:
        _close(conn)
        raise PermissionError(f"IMAP {host}:{port}: login as {config.get('username')!r} failed: {_text(exc)}") from None
    return conn


def list_folders(conn: imaplib.IMAP4) -> list[str]:
    """Folder names as the server lists them (for ``collectors setup mail``)."""
    status, data = conn.list()
    if status != "OK":
        return []
    names = []
    for line in data:
        if not isinstance(line, bytes):
            continue
        match = re.match(rb'\((?P<flags>[^)]*)\) (?P<sep>"[^"]*"|NIL) (?P<name>.+)$', line)
        if match:
            wire = match.group("name").decode("utf-8", "replace").strip('"')
            try:
                names.append(folder_from_wire(wire))
            except ValueError:
                names.append(wire)
    return names


def fetch_new(conn: imaplib.IMAP4, folder: str, cursor: FolderCursor, limit: int) -> FolderBatch:
    """Messages of ``folder`` with a UID above the cursor's (all of them after a UIDVALIDITY change)."""
    status, data = conn.select(quote(folder_to_wire(folder)), readonly=True)
    if status != "OK":
        raise LookupError(f"IMAP folder {folder!r}: cannot select: {_text(data)}")
    uidvalidity = int(conn.response("UIDVALIDITY")[1][0])
    reset = cursor.get("uidvalidity") not in (None, uidvalidity)
    last_uid = 0 if reset else int(cursor.get("last_uid", 0))
    status, data = conn.uid("SEARCH", f"UID {last_uid + 1}:*")
    if status != "OK":
        raise LookupError(f"IMAP folder {folder!r}: UID SEARCH failed: {_text(data)}")
    # "n:*" always matches the highest UID even when it is below n, so filter.
    uids = sorted(int(u) for u in (data[0] or b"").split() if int(u) > last_uid)[:limit]
    messages = []
    received: dict[int, datetime] = {}
    for uid in uids:
        # BODY.PEEK leaves the \Seen flag alone: collecting must not mark mail as read.
        # INTERNALDATE (when the server got it) dates mail without a Date header.
        status, parts = conn.uid("FETCH", str(uid), "(INTERNALDATE BODY.PEEK[])")
        raw = next((p[1] for p in parts or [] if isinstance(p, tuple) and len(p) == 2), None)
        if status == "OK" and raw is not None:
            messages.append((uid, raw))
            when = internaldate(parts)
            if when is not None:
                received[uid] = when
    return FolderBatch(folder=folder, uidvalidity=uidvalidity, messages=messages, reset=reset, received=received)


def logout(conn: imaplib.IMAP4) -> None:
    _close(conn)


# A run of modified base64 in a folder name's wire form ("&" alone is "&-").
_SHIFTED = re.compile(r"&([A-Za-z0-9+,]*)-")


def folder_to_wire(folder: str) -> str:
    """A folder name as IMAP sends it: modified UTF-7 (RFC 3501 5.1.3), "Entwürfe" -> "Entw&APw-rfe".

    A name that is already in that form (ASCII, every "&" starting a valid shift, as setup printed
    names before it decoded them) is sent as it is.
    """
    if folder.isascii() and "&" not in _SHIFTED.sub("", folder):
        try:
            folder_from_wire(folder)
            return folder
        except ValueError:
            pass
    out: list[str] = []
    pending: list[str] = []

    def shift() -> None:
        if pending:
            data = "".join(pending).encode("utf-16-be")
            out.append("&" + base64.b64encode(data).decode("ascii").rstrip("=").replace("/", ",") + "-")
            pending.clear()

    for ch in folder:
        if " " <= ch <= "~":
            shift()
            out.append("&-" if ch == "&" else ch)
        else:
            pending.append(ch)
    shift()
    return "".join(out)


def folder_from_wire(name: str) -> str:
    """A folder name from the server (modified UTF-7) as text; ValueError when a shift is not valid."""

    def unshift(match: re.Match[str]) -> str:
        payload = match.group(1)
        if not payload:
            return "&"
        try:
            return base64.b64decode(payload.replace(",", "/") + "=" * (-len(payload) % 4), validate=True).decode(
                "utf-16-be"
            )
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ValueError(f"not a modified UTF-7 folder name: {name!r}") from exc

    return _SHIFTED.sub(unshift, name)


def quote(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _close(conn: imaplib.IMAP4) -> None:
    try:
        conn.logout()
    except (OSError, imaplib.IMAP4.error):
        pass
    if isinstance(conn, _Session):
        conn.cancel_deadline()


def _text(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(_text(v) for v in value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, BaseException):
        return _text(value.args[0] if value.args else str(value))
    return str(value)
