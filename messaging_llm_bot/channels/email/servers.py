"""The two mail servers, through the standard library (imaplib, smtplib): blocking calls, made off the
event loop by the service (``asyncio.to_thread``). Every failure is a ``MailServerError`` in one sentence that
names the server and never the password.

IMAP: the folder is read only (``BODY.PEEK``: nothing is marked read), mail above the cursor's UID, each mail's
size asked first so one above ``email.max_mail_bytes`` is never downloaded. SMTP: one message, one session.
TLS (``security`` ssl or starttls) with the process's one context per trust setting (assistant_framework/tls.py):
the system's store, or the server's ``ca_file``; a refused certificate is a sentence naming what to set.
"""

from __future__ import annotations

import contextlib
import imaplib
import os
import re
import smtplib
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage

from assistant_framework.config.settings.email import ImapSettings
from assistant_framework.config.settings.mail import SmtpSettings
from assistant_framework.tls import certificate_refused, system_context

#: Mail fetched in one poll at most (the rest waits for the next).
MAX_PER_POLL = 20
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")


class MailServerError(Exception):
    """A server could not be reached, refused the login, or failed a command (one sentence); ``for_good`` when
    sending again cannot help (the recipient was refused)."""

    def __init__(self, message: str, *, for_good: bool = False) -> None:
        super().__init__(message)
        self.for_good = for_good


def password(server: ImapSettings | SmtpSettings) -> str:
    """``password``, else the environment variable ``password_env`` names."""
    if server.password:
        return server.password
    return os.environ.get(server.password_env, "") if server.password_env else ""


@dataclass(frozen=True)
class PolledMail:
    """One mail above the cursor: its UID and bytes (None when it is larger than the bound)."""

    uid: int
    raw: bytes | None
    size: int


@dataclass(frozen=True)
class Batch:
    """What one poll found: the folder's UIDVALIDITY, its highest UID, and the mail above the cursor."""

    uidvalidity: int
    highest: int
    mails: tuple[PolledMail, ...]


class Mailbox:
    """One IMAP connection to the folder; reconnected after a failure."""

    def __init__(self, settings: ImapSettings, folder: str, max_bytes: int) -> None:
        self.settings = settings
        self.folder = folder
        self.max_bytes = max_bytes
        self._conn: imaplib.IMAP4 | None = None

    @property
    def where(self) -> str:
        return f"IMAP {self.settings.host}:{self.settings.port}"

    def connect(self) -> imaplib.IMAP4:
        """A logged-in connection (the open one when it still answers)."""
        if self._conn is not None:
            return self._conn
        s = self.settings
        conn = self._open()
        try:
            conn.login(s.user, password(s))
        except (OSError, imaplib.IMAP4.error):
            _quietly_close(conn)
            raise MailServerError(
                f"{self.where} refused the login as {s.user!r} (email.imap.user and its password)"
            ) from None
        self._conn = conn
        return conn

    def _open(self) -> imaplib.IMAP4:
        """A connection, over TLS unless ``security`` is none; not logged in."""
        s = self.settings
        context = _trust(s, "email.imap") if s.security != "none" else None
        conn: imaplib.IMAP4 | None = None
        try:
            if context is not None and s.security == "ssl":
                return imaplib.IMAP4_SSL(s.host, s.port, ssl_context=context, timeout=s.timeout_seconds)
            conn = imaplib.IMAP4(s.host, s.port, timeout=s.timeout_seconds)
            if context is not None:
                conn.starttls(context)
            return conn
        except ssl.SSLCertVerificationError as err:
            refused = f"{self.where} ({s.security}): {certificate_refused(err, 'email.imap')} (docs/email.md)"
            error = MailServerError(refused)
        except (OSError, imaplib.IMAP4.error) as err:
            error = MailServerError(f"{self.where} ({s.security}) cannot be reached: {_reason(err)}")
        if conn is not None:  # STARTTLS failed: closed without a LOGOUT over a connection that is not private
            with contextlib.suppress(OSError):
                conn.shutdown()
        raise error

    def poll(self, uidvalidity: int | None, last_uid: int | None, since: str | None = None) -> Batch:
        """The mail above ``last_uid`` (with ``uidvalidity`` unchanged); none on a first look (``last_uid`` None),
        which only learns where the folder is. After a UIDVALIDITY change, the mail since ``since`` (IMAP's
        ``01-Jan-2026``), or none without it. A kept connection the server closed meanwhile (an idle timeout)
        is opened again once before it counts as a failure."""
        for fresh in (self._conn is None, True):
            try:
                return self._poll(uidvalidity, last_uid, since)
            except (OSError, imaplib.IMAP4.error, imaplib.IMAP4.abort, ValueError, IndexError) as err:
                self.close()
                if fresh:
                    raise MailServerError(f"{self.where}: reading {self.folder!r} failed: {_reason(err)}") from None
        raise AssertionError("unreachable")  # the second pass always returns or raises

    def _poll(self, uidvalidity: int | None, last_uid: int | None, since: str | None) -> Batch:
        conn = self.connect()
        status, data = conn.select(_quote(self.folder), readonly=True)
        if status != "OK":
            raise MailServerError(f"{self.where}: the folder {self.folder!r} cannot be opened (email.folder)")
        current = int(conn.response("UIDVALIDITY")[1][0])
        status, data = conn.uid("SEARCH", "ALL")
        every = sorted(int(uid) for uid in (data[0] or b"").split()) if status == "OK" else []
        highest = every[-1] if every else 0
        if last_uid is None:
            return Batch(current, highest, ())
        if uidvalidity == current:
            wanted = [uid for uid in every if uid > last_uid]
        elif since:
            status, data = conn.uid("SEARCH", "SINCE", since)
            wanted = sorted(int(uid) for uid in (data[0] or b"").split()) if status == "OK" else []
        else:
            wanted = []
        mails = [self._fetch(conn, uid) for uid in wanted[:MAX_PER_POLL]]
        top = wanted[MAX_PER_POLL - 1] if len(wanted) > MAX_PER_POLL else highest
        return Batch(current, top, tuple(mails))

    def _fetch(self, conn: imaplib.IMAP4, uid: int) -> PolledMail:
        status, parts = conn.uid("FETCH", str(uid), "(RFC822.SIZE)")
        found = _SIZE.search(b" ".join(p for p in parts or [] if isinstance(p, bytes))) if status == "OK" else None
        size = int(found.group(1)) if found else 0
        if size > self.max_bytes:
            return PolledMail(uid, None, size)
        status, parts = conn.uid("FETCH", str(uid), "(BODY.PEEK[])")
        raw = next((p[1] for p in parts or [] if isinstance(p, tuple) and len(p) == 2), None)
        if status != "OK" or not isinstance(raw, bytes):
            raise ValueError(f"FETCH of UID {uid} gave no message")
        if len(raw) > self.max_bytes:
            return PolledMail(uid, None, len(raw))
        return PolledMail(uid, raw, len(raw))

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            _quietly_close(conn)


def send(settings: SmtpSettings, message: EmailMessage) -> None:
    """Send ``message`` to its To; ``MailServerError`` when the server cannot be reached or refuses it."""
    _smtp_session(settings, lambda server: server.send_message(message))


def check_smtp(settings: SmtpSettings) -> None:
    """Connect and log in without sending (doctor); ``MailServerError`` when that fails."""
    _smtp_session(settings, lambda server: server.noop())


def _smtp_session(settings: SmtpSettings, act: Callable[[smtplib.SMTP], object]) -> None:
    where = f"SMTP {settings.host}:{settings.port}"
    context = _trust(settings, "email.smtp") if settings.security != "none" else None
    try:
        if context is not None and settings.security == "ssl":
            server: smtplib.SMTP = smtplib.SMTP_SSL(
                settings.host, settings.port, timeout=settings.timeout_seconds, context=context
            )
        else:
            server = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout_seconds)
        with server:
            if context is not None and settings.security == "starttls":
                server.starttls(context=context)
            if settings.user:
                server.login(settings.user, password(settings))
            act(server)
    except smtplib.SMTPAuthenticationError:
        raise MailServerError(f"{where} refused the login (email.smtp.user and its password)") from None
    except smtplib.SMTPRecipientsRefused:
        raise MailServerError(f"{where} refused the recipient", for_good=True) from None
    except ssl.SSLCertVerificationError as err:
        refused = certificate_refused(err, "email.smtp")
        raise MailServerError(f"{where} ({settings.security}): {refused} (docs/email.md)") from None
    except (smtplib.SMTPException, OSError) as err:
        raise MailServerError(f"{where} failed: {_reason(err)}") from None


def _trust(server: ImapSettings | SmtpSettings, key: str) -> ssl.SSLContext:
    """The TLS context for ``server``: one per process and setting (assistant_framework/tls.py)."""
    try:
        return system_context(server.ca_file)
    except OSError as err:
        raise MailServerError(
            f"{key}.ca_file {server.ca_file!r} cannot be read as CA certificates (PEM): {_reason(err)}"
        ) from None


def _reason(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text[:200]


def _quietly_close(conn: imaplib.IMAP4) -> None:
    try:
        conn.logout()
    except (OSError, imaplib.IMAP4.error):
        pass


def _quote(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'
