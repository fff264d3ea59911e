"""HTTP layer of the fake Bot API: routes POST/GET requests and parses form, JSON and multipart bodies."""

from __future__ import annotations

import email.parser
import email.policy
import json
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

if TYPE_CHECKING:
    from tests.fakes.bot_api import FakeBotAPI

# Fields PTB sends as raw strings; everything else it json.dumps-encodes.
_STRING_FIELDS = {
    "text", "caption", "parse_mode", "action", "url", "secret_token", "callback_query_id", "file_id",
    "language_code", "description", "short_description", "name", "title", "query", "emoji",
    "business_connection_id", "message_effect_id", "inline_message_id", "ip_address", "data",
}


def make_handler(api: "FakeBotAPI") -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to one fake server instance."""
    return type("BoundBotApiHandler", (_Handler,), {"api": api})


class _Handler(BaseHTTPRequestHandler):
    api: "FakeBotAPI"
    # Keep-alive like api.telegram.org: a new TCP connection per call would cost the bot a connect
    # (and this fake a thread start) on every call, which the real server does not.
    protocol_version = "HTTP/1.1"
    timeout = 60  # idle keep-alive connections end instead of living forever
    # Add no delay of our own: TCP_NODELAY, and headers and body leave in one write (a buffered
    # wfile, flushed once per request by the stdlib), so Nagle + delayed ACK never stall a call.
    disable_nagle_algorithm = True
    wbufsize = 1 << 16

    def setup(self) -> None:
        super().setup()
        with self.api._cond:
            self.api._connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.api._cond:
                self.api._connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        self._api_call()

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        path = unquote(urlsplit(self.path).path)
        file_prefix = f"/file/bot{self.api.token}/"
        if path.startswith("/file/bot"):
            if not path.startswith(file_prefix):
                return self._reply(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
            content = self.api.file_content(path[len(file_prefix):])
            if content is None:
                return self._reply(404, {"ok": False, "error_code": 404, "description": "Not Found: file"})
            return self._send(200, content, "application/octet-stream")
        self._api_call()

    def _api_call(self) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        prefix = f"/bot{self.api.token}/"
        if not path.startswith(prefix):
            method = path.rsplit("/", 1)[-1]
            self.api._record(method, {}, 401)
            return self._reply(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
        try:
            params = _parse_body(self.headers.get("Content-Type", ""), self._body())
        except ValueError as err:
            return self._reply(400, {"ok": False, "error_code": 400, "description": f"Bad Request: {err}"})
        params.update(_decode_fields(parse_qsl(url.query, keep_blank_values=True)))
        status, reply = self.api.handle(path[len(prefix):], params)
        self._reply(status, reply)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _reply(self, status: int, obj: dict) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client abandoned a long-poll; harmless


def _decode_value(key: str, value: str) -> Any:
    if key in _STRING_FIELDS:
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _decode_fields(pairs: list[tuple[str, str]]) -> dict:
    return {k: _decode_value(k, v) for k, v in pairs}


def _parse_body(content_type: str, body: bytes) -> dict:
    """Parse a form, JSON or multipart request body into a params dict."""
    ctype = content_type.split(";")[0].strip().lower()
    if not body:
        return {}
    if ctype == "application/json":
        obj = json.loads(body)
        if not isinstance(obj, dict):
            raise ValueError("JSON body must be an object")
        return obj
    if ctype == "multipart/form-data":
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
        params: dict = {}
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True) or b""
            if part.get_filename() is not None:
                params[name] = {"filename": part.get_filename(), "content": payload, "size": len(payload),
                                "mime_type": part.get_content_type()}
            else:
                params[name] = _decode_value(name, payload.decode("utf-8"))
        return params
    return _decode_fields(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
