"""Fake ``signal-cli daemon --http`` for tests: JSON-RPC over HTTP plus the SSE event stream, stdlib only.

Shapes follow signal-cli (src/main/java/org/asamk/signal/http/HttpServerHandler.java and json/*):

- ``POST /api/v1/rpc``: one JSON-RPC 2.0 request or a batch (list). Content-Type must be
  ``application/json`` (else 415); only POST (else 405); a request without an ``id`` is a
  notification (no response; a body of only notifications answers 201 without body). Errors:
  -32700 parse error, -32600 invalid request, -32601 unknown method, -32602 invalid params,
  -1 user errors (unknown group, bad ``textStyle`` syntax, unknown attachment).
- ``GET /api/v1/events``: ``text/event-stream`` with chunked encoding; each incoming message is
  ``event:receive`` + ``data:{"envelope": {...}, "account": "+..."}``; ``:`` keep-alives.
  ``wrap="jsonrpc"`` sends the stdio/socket form instead (a JSON-RPC ``receive`` notification).
- ``GET /api/v1/check``: 200, no body.
- The Host header must name the loopback address (else 421), as the real daemon pins it.

Receiving is modelled on ``--receive-mode=manual``: a message given to ``deliver`` waits until an
event client is connected, then goes to every connected client. ``stop()`` drops all connections
(queued messages stay queued); ``start()`` again serves on the same port (a daemon restart).

Methods: ``send`` (recipient|groupId, message, textStyle, attachments, quoteTimestamp...),
``sendTyping``, ``sendReceipt``, ``getAttachment``, ``listGroups``, ``version``, ``getUserStatus`` (the
account's own number gives ``account_uuid``). Everything received
is recorded: ``sent`` (send params + the assigned ``timestamp``; attachments given as ``data:`` URIs, as
signal-cli takes bytes, decoded under ``files``), ``typing``, ``receipts``, ``rpc``,
``batches``; of an answer over 1 MB (an attachment's base64), how much the client took before it hung up
(``large_answers``: such an answer leaves in 64 KB pieces).
Faults: ``send_errors`` (the next send calls fail with these RpcErrors, in order); a recipient in
``unregistered`` is not a Signal user: every send to them fails as signal-cli answers it (-1 with the
send results in ``data``, type ``UNREGISTERED_FAILURE``).
Every response up to 1 MB is written in one write on a TCP_NODELAY socket (``tests.fakes._http``).
"""

from __future__ import annotations

import base64
import json
import re
import select
import socket
import threading
import time
from typing import Any

from tests.fakes._http import FakeHandler, FakeServer

STYLES = ("NONE", "BOLD", "ITALIC", "SPOILER", "STRIKETHROUGH", "MONOSPACE")
MAX_MESSAGE_SIZE_BYTES = 2000  # signal-cli ServiceConfig: longer bodies become a long-text attachment
_STYLE_RE = re.compile(r"(\d+):(\d+):(.+)")
#: An answer larger than this leaves in pieces of ``LARGE_ANSWER_PIECE``, each counted (``large_answers``).
LARGE_ANSWER_BYTES = 1 << 20
LARGE_ANSWER_PIECE = 1 << 16


class RpcError(Exception):
    """A JSON-RPC error answer; ``data`` as signal-cli adds it (``{"response": <the send result>}``)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class _Handler(FakeHandler):
    server_header = "fake-signal-cli"  # and no Date header

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]").lower()
        if host in ("127.0.0.1", "localhost", "::1"):
            return True
        self.send(421)
        return False

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self.guard(self._get, OSError)

    def _get(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/api/v1/check":
            self.send(200)
        elif path == "/api/v1/events":
            if self._host_ok():
                self.server.fake._stream(self)
        elif path == "/api/v1/rpc":
            self.send(405)
        else:
            self.send(404)

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        path = self.path.split("?", 1)[0]
        body = self.read_body()
        self.guard(lambda: self._post(path, body))

    def _post(self, path: str, body: bytes) -> None:
        if path != "/api/v1/rpc":
            self.send(405 if path in ("/api/v1/events", "/api/v1/check") else 404)
            return
        if not self._host_ok():
            return
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            self.send(415)
            return
        answer = self.server.fake._rpc_body(body)
        if answer is None:
            self.send(201)
            return
        payload = json.dumps(answer).encode("utf-8")
        if len(payload) <= LARGE_ANSWER_BYTES:
            self.send(200, payload, "application/json")
        else:
            self._send_counted(payload)

    def _send_counted(self, payload: bytes) -> None:
        """A large answer (an attachment's base64) in pieces, noting in ``large_answers`` how much of it the
        client's socket took before it hung up."""
        fake = self.server.fake
        record = {"bytes": len(payload), "sent": 0, "done": False}
        with fake._cond:
            fake.large_answers.append(record)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            for start in range(0, len(payload), LARGE_ANSWER_PIECE):
                self.wfile.write(payload[start : start + LARGE_ANSWER_PIECE])
                self.wfile.flush()
                record["sent"] = min(len(payload), start + LARGE_ANSWER_PIECE)
        finally:
            record["done"] = True


class FakeSignalDaemon:
    """A signal-cli HTTP daemon on 127.0.0.1 that remembers what the bot sent."""

    def __init__(
        self,
        account: str = "+15550000000",
        *,
        account_uuid: str = "a0000000-0000-4000-8000-000000000b07",
        wrap: str = "plain",
        keepalive_seconds: float = 15.0,
    ) -> None:
        self.account = account
        self.account_uuid = account_uuid
        self.wrap = wrap
        self.keepalive_seconds = keepalive_seconds
        self.sent: list[dict] = []
        self.typing: list[dict] = []
        self.receipts: list[dict] = []
        self.rpc: list[dict] = []
        self.batches: list[list] = []  # the methods of each batch request
        self.groups: dict[str, dict] = {}
        self.attachments: dict[str, bytes] = {}
        # Answers over LARGE_ANSWER_BYTES: their size and how much the client's socket took ("sent"), "done" once
        # the fake stopped writing (all sent, or the client hung up).
        self.large_answers: list[dict] = []
        self.send_errors: list[RpcError] = []  # the next send calls fail with these, in order
        self.unregistered: set[str] = set()  # recipients that are not Signal users: every send to them fails
        self.event_connects = 0
        self._queue: list[dict] = []
        self._clients = 0
        self._cond = threading.Condition()
        self._server: FakeServer | None = None
        self._port = 0
        self._clock = int(time.time() * 1000)
        self._generation = 0

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> "FakeSignalDaemon":
        """Serve on 127.0.0.1 (the same port again after a ``stop``)."""
        server = FakeServer(_Handler, self, self._port, backlog=5)  # socketserver's default backlog
        self._port = server.server_address[1]
        self._server = server
        with self._cond:
            self._generation += 1
        server.start("fake-signal-daemon")
        return self

    def stop(self) -> None:
        """Stop serving and drop every open connection (event streams end); state is kept."""
        server, self._server = self._server, None
        if server is None:
            return
        with self._cond:
            self._generation += 1
            self._cond.notify_all()
        server.stop()

    def __enter__(self) -> "FakeSignalDaemon":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def connected(self) -> int:
        """How many event-stream clients are connected now."""
        with self._cond:
            return self._clients

    # -- incoming messages (what users send to the bot) ----------------------

    def next_timestamp(self) -> int:
        """A fresh, strictly increasing millisecond timestamp (Signal message ids)."""
        with self._cond:
            self._clock = max(self._clock + 1, int(time.time() * 1000))
            return self._clock

    def envelope(
        self,
        source: str,
        text: str | None = None,
        *,
        uuid: str | None = None,
        number: bool = True,
        group_id: str | None = None,
        timestamp: int | None = None,
        attachments: list[dict] | None = None,
        mentions: list[dict] | None = None,
        quote: dict | None = None,
        name: str = "User",
    ) -> dict:
        """A receive event object ``{"envelope": ..., "account": ...}`` shaped as signal-cli writes it."""
        ts = timestamp or self.next_timestamp()
        uuid = uuid or _uuid_for(source)
        data: dict[str, Any] = {"timestamp": ts, "message": text, "expiresInSeconds": 0, "viewOnce": False}
        if mentions:
            data["mentions"] = mentions
        if attachments:
            data["attachments"] = attachments
        if quote:
            data["quote"] = quote
        if group_id:
            data["groupInfo"] = {
                "groupId": group_id,
                "groupName": self.groups.get(group_id, {}).get("name", "G"),
                "revision": 2,
                "type": "DELIVER",
            }
        env = {
            "source": source if number else uuid,
            "sourceNumber": source if number else None,
            "sourceUuid": uuid,
            "sourceName": name,
            "sourceDevice": 1,
            "timestamp": ts,
            "serverReceivedTimestamp": ts + 5,
            "serverDeliveredTimestamp": ts + 9,
            "dataMessage": data,
        }
        return {"envelope": env, "account": self.account}

    def deliver(self, event: dict | str) -> dict | str:
        """Queue a receive event (or a text written to the stream as it is: what else a stream may carry); it goes
        out as soon as an event client is connected."""
        with self._cond:
            self._queue.append(event)
            self._cond.notify_all()
        return event

    def message(self, source: str, text: str | None = None, **kwargs: Any) -> dict:
        """Build and deliver a data message from ``source``; returns the event."""
        event = self.envelope(source, text, **kwargs)
        self.deliver(event)
        return event

    def add_group(self, group_id: str, name: str, members: list[str]) -> None:
        """Make a group known, so sends to it succeed."""
        self.groups[group_id] = {"id": group_id, "name": name, "members": list(members)}

    def add_attachment(
        self, data: bytes, content_type: str, *, filename: str | None = None, voice_note: bool = False
    ) -> dict:
        """Store a received attachment; returns its JSON form for ``envelope(attachments=[...])``."""
        ext = {"audio/aac": "aac", "audio/ogg": "ogg", "image/jpeg": "jpg", "application/pdf": "pdf"}.get(
            content_type, "bin"
        )
        att_id = (
            f"{base64.urlsafe_b64encode(str(len(self.attachments) + 1).encode()).decode().rstrip('=')}"
            f"{self.next_timestamp()}.{ext}"
        )
        self.attachments[att_id] = data
        del voice_note  # signal-cli's JSON has no voice-note flag; clients send audio/aac without a file name
        return {
            "contentType": content_type,
            "filename": filename,
            "id": att_id,
            "size": len(data),
            "width": None,
            "height": None,
            "caption": None,
            "uploadTimestamp": self.next_timestamp(),
        }

    def pending(self) -> int:
        """Messages waiting for an event client."""
        with self._cond:
            return len(self._queue)

    def wait_sent(self, count: int, timeout: float = 10.0) -> list[dict]:
        """Wait until at least ``count`` messages were sent; returns them (raises on timeout)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.sent) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"expected {count} sent messages, got {len(self.sent)}: {[s.get('message') for s in self.sent]}"
                    )
                self._cond.wait(min(left, 0.1))
            return list(self.sent)

    def wait_connected(self, timeout: float = 10.0) -> None:
        """Wait until an event client is connected."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._clients == 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("no event client connected")
                self._cond.wait(min(left, 0.1))

    def sent_to(self, target: str) -> list[dict]:
        """Messages sent to a recipient number/uuid or a group id."""
        return [s for s in self.sent if target in (s.get("recipient") or []) or s.get("groupId") == target]

    # -- event stream --------------------------------------------------------

    def _stream(self, handler: _Handler) -> None:
        handler.start_chunked("text/event-stream")
        handler.wfile.flush()  # the head leaves now: events may be a keep-alive period away
        handler.close_connection = True
        with self._cond:
            generation = self._generation
            self._clients += 1
            self.event_connects += 1
            self._cond.notify_all()
        try:
            last = time.monotonic()
            while True:
                with self._cond:
                    while not self._queue and self._generation == generation:
                        left = self.keepalive_seconds - (time.monotonic() - last)
                        if left <= 0:
                            break
                        self._cond.wait(min(left, 0.2))
                        if _peer_closed(handler.connection):
                            return  # a stopped bot: not counted as connected, and no event written to it
                    if self._generation != generation or _peer_closed(handler.connection):
                        return
                    batch, self._queue = self._queue, []
                if not batch:
                    handler.send_chunk(b":\n")
                    last = time.monotonic()
                    continue
                for event in batch:
                    payload = (
                        event if self.wrap == "plain" else {"jsonrpc": "2.0", "method": "receive", "params": event}
                    )
                    data = json.dumps(payload, separators=(",", ":"))
                    block = event if isinstance(event, str) else f"event:receive\ndata:{data}\n\n"
                    try:
                        handler.send_chunk(block.encode("utf-8"))
                    except OSError:
                        with self._cond:  # not delivered: it waits for the next client, as on the server
                            self._queue.insert(0, event)
                        raise
        finally:
            with self._cond:
                self._clients -= 1
                self._cond.notify_all()

    # -- JSON-RPC ------------------------------------------------------------

    def _rpc_body(self, body: bytes) -> Any:
        try:
            parsed = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return _error(None, -32700, "Parse error")
        if isinstance(parsed, list):
            if not parsed:
                return _error(None, -32600, "Invalid request")
            with self._cond:
                self.batches.append([r.get("method") if isinstance(r, dict) else None for r in parsed])
            answers = [a for a in (self._one(r) for r in parsed) if a is not None]
            return answers or None
        return self._one(parsed)

    def _one(self, request: Any) -> dict | None:
        if (
            not isinstance(request, dict)
            or request.get("jsonrpc") != "2.0"
            or not isinstance(request.get("method"), str)
        ):
            return _error(request.get("id") if isinstance(request, dict) else None, -32600, "method field must be set")
        rid = request.get("id")
        params = request.get("params") or {}
        with self._cond:
            self.rpc.append({"method": request["method"], "params": params, "id": rid})
        try:
            if not isinstance(params, dict):
                raise RpcError(-32602, "params must be an object")
            result = self._call(request["method"], params)
        except RpcError as err:
            return _error(rid, err.code, err.message, err.data) if rid is not None else None
        if rid is None:
            return None
        return {"jsonrpc": "2.0", "result": result, "id": rid}

    def _call(self, method: str, params: dict) -> Any:
        if method == "send":
            return self._send(params)
        if method == "sendTyping":
            recipients, group = _targets(params)
            with self._cond:
                self.typing.append({"recipient": recipients, "groupId": group, "stop": bool(params.get("stop"))})
            return {}
        if method == "sendReceipt":
            if not params.get("recipient"):
                raise RpcError(-32602, "recipient is required")
            with self._cond:
                self.receipts.append(dict(params))
            return {}
        if method == "getAttachment":
            data = self.attachments.get(str(params.get("id")))
            if data is None:
                raise RpcError(-1, f"Unable to find attachment: {params.get('id')}")
            return {"data": base64.b64encode(data).decode("ascii")}
        if method == "listGroups":
            return [
                {"id": g["id"], "name": g["name"], "isMember": True, "members": g["members"]}
                for g in self.groups.values()
            ]
        if method == "version":
            return {"version": "0.13.99-fake"}
        if method == "getUserStatus":
            return self._user_status(params)
        raise RpcError(-32601, "Method not implemented")

    def _user_status(self, params: dict) -> list[dict]:
        """signal-cli's ``getUserStatus`` (``recipient``: a list of numbers, one number as a string too): one
        ``{"recipient", "number", "uuid", "isRegistered"}`` each; the fake knows only its own account's UUID,
        any other number is unregistered (uuid null), as the Signal server answers an unknown one."""
        recipients = params.get("recipient")
        recipients = [recipients] if isinstance(recipients, str) else recipients
        if not isinstance(recipients, list) or not recipients or not all(isinstance(r, str) for r in recipients):
            raise RpcError(-32602, "recipient is required")
        answer = []
        for number in recipients:
            uuid = self.account_uuid if number == self.account else None
            answer.append({"recipient": number, "number": number, "uuid": uuid, "isRegistered": uuid is not None})
        return answer

    def _send(self, params: dict) -> dict:
        recipients, group = _targets(params)
        if not recipients and not group:
            raise RpcError(-1, "No recipients given")
        if group and group not in self.groups:
            raise RpcError(-1, f"Group not found: {group}")
        message = params.get("message")
        attachments = params.get("attachments") or params.get("attachment") or []
        attachments = [attachments] if isinstance(attachments, str) else list(attachments)
        if not message and not attachments:
            raise RpcError(-1, "Sending empty message is not allowed, either a message or an attachment must be given.")
        files = [_data_uri(a) for a in attachments if str(a).startswith("data:")]
        styles = params.get("textStyle") or params.get("textStyles") or []
        styles = [styles] if isinstance(styles, str) else list(styles)
        parsed = []
        for style in styles:
            m = _STYLE_RE.fullmatch(str(style))
            if not m:
                raise RpcError(-1, f"Invalid textStyle syntax ({style}) expected 'start:length:STYLE'")
            if m.group(3) not in STYLES:
                raise RpcError(-1, f"Invalid style: {m.group(3)}")
            parsed.append((int(m.group(1)), int(m.group(2)), m.group(3)))
        with self._cond:
            if self.send_errors:
                raise self.send_errors.pop(0)
            unregistered = [r for r in recipients if r in self.unregistered]
        ts = self.next_timestamp()
        if unregistered:
            results = [
                {
                    "recipientAddress": {"uuid": None, "number": r if r.startswith("+") else None, "username": None},
                    "type": "UNREGISTERED_FAILURE",
                }
                for r in unregistered
            ]
            raise RpcError(-1, "Failed to send message", data={"response": {"timestamp": ts, "results": results}})
        text = str(message or "")
        record = {
            **params,
            "recipient": recipients,
            "groupId": group,
            "message": text,
            "styles": parsed,
            "timestamp": ts,
            "long_text": len(text.encode("utf-8")) > MAX_MESSAGE_SIZE_BYTES,
            "files": files,
            "styles_in_range": all(s + n <= _utf16_len(text) for s, n, _ in parsed),
        }
        targets = recipients or self.groups[group]["members"]
        results = [
            {
                "recipientAddress": {
                    "uuid": _uuid_for(t),
                    "number": t if t.startswith("+") else None,
                    "username": None,
                },
                **({"groupId": group} if group else {}),
                "type": "SUCCESS",
            }
            for t in targets
        ]
        with self._cond:
            self.sent.append(record)
            self._cond.notify_all()
        return {"results": results, "timestamp": ts}


def _peer_closed(sock: socket.socket) -> bool:
    """True when the client closed its end (a real daemon notices only when a write fails; events written
    meanwhile are lost, as docs/signal.md says, which would make a test's restart a race)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _targets(params: dict) -> tuple[list[str], str | None]:
    recipients = params.get("recipient") or params.get("recipients") or []
    recipients = [recipients] if isinstance(recipients, str) else [str(r) for r in recipients]
    group = params.get("groupId") or params.get("group-id")
    if isinstance(group, list):
        group = group[0] if group else None
    return recipients, group


def _uuid_for(source: str) -> str:
    if re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", source):
        return source
    digits = re.sub(r"\D", "", source).rjust(12, "0")[-12:]
    return f"00000000-0000-4000-8000-{digits}"


def _error(rid: Any, code: int, message: str, data: Any = None) -> dict:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message, "data": data}, "id": rid}


def _data_uri(uri: str) -> dict:
    """An attachment given as ``data:<MIME-TYPE>[;filename=<NAME>];base64,<DATA>`` (how signal-cli takes bytes
    over JSON-RPC): ``{"mime_type", "filename", "content"}``; a malformed one is refused as signal-cli does."""
    head, comma, data = uri.partition(",")
    fields = head.removeprefix("data:").split(";")
    if not comma or fields[-1] != "base64" or "/" not in fields[0]:
        raise RpcError(-1, f"Invalid attachment: {uri[:40]}")
    names = [f.removeprefix("filename=") for f in fields[1:-1] if f.startswith("filename=")]
    try:
        content = base64.b64decode(data, validate=True)
    except ValueError:
        raise RpcError(-1, "Invalid attachment: bad base64") from None
    return {"mime_type": fields[0], "filename": names[0] if names else None, "content": content}
