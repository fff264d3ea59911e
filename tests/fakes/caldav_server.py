"""A real CalDAV server on 127.0.0.1 for tests: Radicale (from the dev extra) as a child process.

Usage::

    with CalDAVServer(tmp_path) as server:
        url = server.make_calendar("Home")      # MKCALENDAR with a display name
        ... caldav.DAVClient(server.url, username=server.user, password="x") ...

Radicale runs with ``--auth-type none`` (any user and password), its collections in a folder under
``root``. The port is found free by binding 0 first; the server is ready when it answers a request.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import requests

from tests.waiting import wait_until

_MKCALENDAR = """<?xml version="1.0" encoding="utf-8"?>
<C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:set><D:prop><D:displayname>{name}</D:displayname></D:prop></D:set>
</C:mkcalendar>"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class CalDAVServer:
    """Radicale on a free loopback port, storing under ``root``."""

    def __init__(self, root: Path, user: str = "owner") -> None:
        self.root = Path(root)
        self.user = user
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> CalDAVServer:
        storage = self.root / "radicale"
        storage.mkdir(parents=True, exist_ok=True)
        log = open(self.root / "radicale.log", "wb")  # noqa: SIM115 - closed with the process
        self._log = log
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "radicale",
                "--server-hosts",
                f"127.0.0.1:{self.port}",
                "--auth-type",
                "none",
                # A client's first request goes without credentials and is answered 401 (caldav then sends
                # them): Radicale holds every such answer about a second by default (``[auth] delay``, against
                # password guessing), and the skill opens a connection per call.
                "--auth-delay",
                "0",
                "--storage-filesystem-folder",
                str(storage),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        """Until the server accepts a connection (its own start; no fixed sleep); its log if it exits."""

        def listening() -> bool:
            assert self._process is not None
            if self._process.poll() is not None:
                raise RuntimeError(f"radicale exited: {(self.root / 'radicale.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False

        wait_until(listening, timeout=60, what="radicale to listen")

    def __exit__(self, *exc: object) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()

    def make_calendar(self, name: str) -> str:
        """A new calendar with display name ``name`` (MKCALENDAR); its URL."""
        url = f"{self.url}{self.user}/{uuid.uuid4().hex}/"
        answer = requests.request(
            "MKCALENDAR",
            url,
            data=_MKCALENDAR.format(name=name).encode(),
            headers={"Content-Type": "application/xml"},
            auth=(self.user, "x"),
            timeout=10,
        )
        assert answer.status_code == 201, (answer.status_code, answer.text)
        return url

    def events(self, calendar_url: str) -> list[bytes]:
        """Every event file of a calendar as stored (read from the server, not from the skill)."""
        folder = self.root / "radicale" / "collection-root" / self.user / calendar_url.rstrip("/").rsplit("/", 1)[1]
        return [path.read_bytes() for path in sorted(folder.glob("*.ics"))]

    def put_event(self, calendar_url: str, uid: str, summary: str, start: str, minutes: int, zone: str) -> None:
        """An event stored by a plain PUT (as another calendar app would): ``start`` is local
        ``YYYYMMDDTHHMMSS`` in ``zone``."""
        from datetime import datetime, timedelta

        begin = datetime.strptime(start, "%Y%m%dT%H%M%S")
        end = (begin + timedelta(minutes=minutes)).strftime("%Y%m%dT%H%M%S")
        body = (
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//tests//EN\r\nBEGIN:VEVENT\r\n"
            f"UID:{uid}\r\nDTSTAMP:20260101T000000Z\r\nSUMMARY:{summary}\r\n"
            f"DTSTART;TZID={zone}:{start}\r\nDTEND;TZID={zone}:{end}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        )
        answer = requests.put(
            f"{calendar_url}{uid}.ics",
            data=body.encode(),
            headers={"Content-Type": "text/calendar"},
            auth=(self.user, "x"),
            timeout=10,
        )
        assert answer.status_code in (201, 204), (answer.status_code, answer.text)
