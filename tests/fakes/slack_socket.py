"""Slack's side of Socket Mode for the fake Slack API (tests/fakes/slack_api.py): the websocket a bot opens with
the URL ``apps.connections.open`` gave it.

A Tornado websocket server on 127.0.0.1 in a thread of its own. As Slack documents Socket Mode:

- ``open_url()`` (``apps.connections.open``'s answer) is ``ws://127.0.0.1:<port>/link/?ticket=<t>&app_id=<a>``;
  a ticket connects once: an unknown or used one is refused (HTTP 401) before the upgrade.
- On connect the server sends ``{"type": "hello", "num_connections", "debug_info", "connection_info"}``.
- ``send(payload)`` wraps an Events API payload in an envelope ``{"envelope_id", "type": "events_api",
  "payload", "accepts_response_payload": false, "retry_attempt", "retry_reason"}`` and sends it to the newest
  connection (``send(fields, "slash_commands")``: a slash command's fields, ``"interactive"``: a button's
  payload, each with ``accepts_response_payload: true``). Every envelope must be acknowledged with
  ``{"envelope_id": ...}``; one not acknowledged within ``ack_timeout`` seconds is sent again (``retry_attempt``
  + 1, ``retry_reason: "timeout"``) up to
  ``MAX_RETRIES`` times, and an envelope sent while no bot is connected waits for the next connection.
  ``again(envelope_id)`` sends an envelope again at once (a redelivery). Anything else the bot sends is kept
  in ``bad_frames``.
- ``disconnect()`` sends ``{"type": "disconnect", "reason": "refresh_requested"}``; the server closes that
  connection once a newer one is open (or after ``DISCONNECT_GRACE`` seconds), as Slack does.

Observing: ``connections`` (how many were opened), ``acked`` (envelope ids), ``acks`` (each in order), ``sends``
(every envelope sent, with its attempt), ``unacked()``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
import uuid
from typing import Any

import tornado.httpserver
import tornado.netutil
import tornado.web
import tornado.websocket

MAX_RETRIES = 3
DISCONNECT_GRACE = 10.0


class _Link(tornado.websocket.WebSocketHandler):
    def initialize(self, fake: FakeSocketMode) -> None:
        self.fake = fake

    async def get(self, *args: Any, **kwargs: Any) -> None:
        if not self.fake.take_ticket(self.get_argument("ticket", "")):
            self.set_status(401)
            self.finish("invalid or used ticket")
            return
        await super().get(*args, **kwargs)

    def open(self, *args: str, **kwargs: str) -> None:
        self.fake.opened(self)

    def on_message(self, message: str | bytes) -> None:
        self.fake.received(message)

    def on_close(self) -> None:
        self.fake.closed(self)


class FakeSocketMode:
    def __init__(self, app_id: str = "A0APP00001", ack_timeout: float = 3.0) -> None:
        self.app_id = app_id
        self.ack_timeout = ack_timeout
        self.connections = 0
        self.acked: set[str] = set()
        self.acks: list[str] = []  # every acknowledgement, in order (an envelope sent twice is acked twice)
        self.sends: list[dict[str, Any]] = []  # every envelope as sent
        self.bad_frames: list[str] = []
        self._tickets: set[str] = set()
        self._envelopes: dict[str, dict[str, Any]] = {}  # envelope id -> the envelope (its newest attempt)
        self._open: list[_Link] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.port = 0
        self._thread = threading.Thread(target=self._run, name="fake-slack-socket", daemon=True)

    # -- running ---------------------------------------------------------------------------

    def start(self) -> FakeSocketMode:
        self._thread.start()
        self._ready.wait(10)
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = tornado.web.Application([(r"/link/?", _Link, {"fake": self})])
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        server = tornado.httpserver.HTTPServer(app)
        server.add_sockets(sockets)
        self.port = sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.stop()

    def stop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._close_all)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    def _close_all(self) -> None:
        for link in list(self._open):
            link.close()

    def _call(self, fn: Any, *args: Any) -> None:
        self._loop.call_soon_threadsafe(fn, *args)

    # -- apps.connections.open -------------------------------------------------------------

    def open_url(self) -> str:
        ticket = secrets.token_hex(16)
        with self._lock:
            self._tickets.add(ticket)
        return f"ws://127.0.0.1:{self.port}/link/?ticket={ticket}&app_id={self.app_id}"

    def take_ticket(self, ticket: str) -> bool:
        with self._lock:
            if ticket not in self._tickets:
                return False
            self._tickets.discard(ticket)
            return True

    # -- the connection (on the server's loop) ---------------------------------------------

    def opened(self, link: _Link) -> None:
        with self._lock:
            self.connections += 1
            older = list(self._open)
            self._open.append(link)
            waiting = [e for i, e in self._envelopes.items() if i not in self.acked]
        hello = {
            "type": "hello",
            "num_connections": len(older) + 1,
            "debug_info": {"host": "applink-fake", "build_number": 1, "approximate_connection_time": 18060},
            "connection_info": {"app_id": self.app_id},
        }
        link.write_message(json.dumps(hello))
        for old in older:
            if getattr(old, "disconnect_asked", False):
                old.close()  # the newer connection is open: the one asked to go is closed
        for envelope in waiting:
            self._write(envelope)

    def closed(self, link: _Link) -> None:
        with self._lock:
            if link in self._open:
                self._open.remove(link)

    def received(self, message: str | bytes) -> None:
        text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
        try:
            frame = json.loads(text)
        except ValueError:
            frame = None
        envelope_id = frame.get("envelope_id") if isinstance(frame, dict) else None
        with self._lock:
            if isinstance(envelope_id, str) and envelope_id in self._envelopes:
                self.acked.add(envelope_id)
                self.acks.append(envelope_id)
            else:
                self.bad_frames.append(text)

    def _write(self, envelope: dict[str, Any]) -> None:
        with self._lock:
            links = [link for link in self._open if not getattr(link, "disconnect_asked", False)]
            if not links:
                return  # sent again when a bot connects
            self.sends.append(dict(envelope, at=time.monotonic()))
        links[-1].write_message(json.dumps(envelope))
        self._loop.call_later(self.ack_timeout, self._check_ack, envelope["envelope_id"])

    def _check_ack(self, envelope_id: str) -> None:
        with self._lock:
            envelope = self._envelopes[envelope_id]
            if envelope_id in self.acked or envelope["retry_attempt"] >= MAX_RETRIES:
                return
            envelope["retry_attempt"] += 1
            envelope["retry_reason"] = "timeout"
        self._write(envelope)

    # -- what a test does ------------------------------------------------------------------

    def send(self, payload: dict[str, Any], kind: str = "events_api") -> str:
        """Send ``payload`` in a new envelope; its envelope id."""
        envelope_id = str(uuid.uuid4())
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",  # a command's or a press's ack may carry an answer
            "retry_attempt": 0,
            "retry_reason": "",
        }
        with self._lock:
            self._envelopes[envelope_id] = envelope
        self._call(self._write, envelope)
        return envelope_id

    def again(self, envelope_id: str) -> None:
        """Send an envelope once more, as Slack does when it is not sure it arrived."""
        with self._lock:
            envelope = self._envelopes[envelope_id]
            envelope["retry_attempt"] += 1
            envelope["retry_reason"] = "timeout"
        self._call(self._write, envelope)

    def disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask the connected bot to reconnect (a ``disconnect`` envelope), as Slack does every few hours."""

        def ask() -> None:
            with self._lock:
                links = list(self._open)
            for link in links:
                link.disconnect_asked = True  # type: ignore[attr-defined]
                link.write_message(json.dumps({"type": "disconnect", "reason": reason, "debug_info": {"host": "x"}}))
                self._loop.call_later(DISCONNECT_GRACE, link.close)

        self._call(ask)

    def unacked(self) -> list[str]:
        with self._lock:
            return [i for i in self._envelopes if i not in self.acked]

    def attempts(self, envelope_id: str) -> int:
        """How many times the envelope was sent."""
        with self._lock:
            return sum(1 for s in self.sends if s["envelope_id"] == envelope_id)
