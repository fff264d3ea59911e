"""HTTP layer of the fake Bot API: routes POST/GET requests and parses form, JSON and multipart bodies."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from tests.fakes._http import FakeHandler, multipart_parts

if TYPE_CHECKING:
    from tests.fakes.bot_api import FakeBotAPI

# Fields PTB sends as raw strings; everything else it json.dumps-encodes.
_STRING_FIELDS = {
    "text",
    "caption",
    "parse_mode",
    "action",
    "url",
    "secret_token",
    "callback_query_id",
    "file_id",
    "language_code",
    "description",
    "short_description",
    "name",
    "title",
    "query",
    "emoji",
    "business_connection_id",
    "message_effect_id",
    "inline_message_id",
    "ip_address",
    "data",
}


class BotApiHandler(FakeHandler):
    """Routes the calls of one ``FakeBotAPI`` (``server.fake``)."""

    # Keep-alive like api.telegram.org: a new TCP connection per call would cost the bot a connect
    # (and this fake a thread start) on every call, which the real server does not.
    timeout = 60  # idle keep-alive connections end instead of living forever

    @property
    def api(self) -> "FakeBotAPI":
        return self.server.fake

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        self._api_call()

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        path = unquote(urlsplit(self.path).path)
        file_prefix = f"/file/bot{self.api.token}/"
        if path.startswith("/file/bot"):
            if not path.startswith(file_prefix):
                return self._reply(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
            content = self.api.file_content(path[len(file_prefix) :])
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
            params = _parse_body(self.headers.get("Content-Type", ""), self.read_body())
        except ValueError as err:
            return self._reply(400, {"ok": False, "error_code": 400, "description": f"Bad Request: {err}"})
        params.update(_decode_fields(parse_qsl(url.query, keep_blank_values=True)))
        answer = self.api.next_answer(path[len(prefix) :])
        if answer is not None:
            self.api._record(path[len(prefix) :], params, answer[0])
            return self.guard(lambda: self.deliver(*answer))
        status, reply = self.api.handle(path[len(prefix) :], params)
        self._reply(status, reply)

    def _reply(self, status: int, obj: dict) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        try:
            self.send(status, body, content_type)
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
        params: dict = {}
        for name, filename, part_type, payload in multipart_parts(content_type, body):
            if filename is not None:
                params[name] = {"filename": filename, "content": payload, "size": len(payload), "mime_type": part_type}
            else:
                params[name] = _decode_value(name, payload.decode("utf-8"))
        return params
    return _decode_fields(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
