"""A fake of Meta's WhatsApp Cloud API (the Graph API's WhatsApp endpoints), and Meta's webhook side.

A stdlib server on 127.0.0.1 (tests.fakes._http). Point the channel at it with ``whatsapp.base_url =
fake.base_url`` (``http://127.0.0.1:<port>/v21.0``). What it answers, as the Cloud API documents:

- ``POST /v21.0/<phone_number_id>/messages`` with ``Authorization: Bearer <token>``: ``text`` (``body`` 1 to
  4,096 characters, optional ``context.message_id``), ``image``/``document``/``audio`` (an uploaded media
  ``id``; ``caption`` only on image and document, ``filename`` only on document), ``template`` (a name and
  language registered with ``add_template``, its body's text parameters: exactly as many as the template
  has, each at most 1,024 characters, no newline or tab and no more than four spaces in a row: #132018),
  and ``status: read`` with a ``message_id`` the number received (optionally ``typing_indicator``).
  Answers ``{"messaging_product", "contacts", "messages": [{"id": "wamid..."}]}``; ``{"success": true}`` for
  a read receipt.
- The customer service window: a free-form message to a user whose last message (its ``timestamp``) is more
  than 24 hours old is accepted (200 with an id), as the real API does, and then fails: it is not delivered
  and a ``failed`` status with error 131047 (Re-engagement message) is posted to the webhook. Templates go
  out whatever the window.
- ``POST /v21.0/<phone_number_id>/media`` (multipart ``file``, ``type``, ``messaging_product``): an id;
  images (JPEG, PNG) at most 5 MB, audio 16 MB, documents 100 MB (#131053 past it).
- ``GET /v21.0/<phone_number_id>``: the number's ``display_phone_number``, ``verified_name`` and ``id``.
- ``GET /v21.0/<media_id>``: ``{"url", "mime_type", "sha256", "file_size", "id", "messaging_product"}``; the URL
  (``/media-download/<token>``) answers only with the bearer token, and only for five minutes.
- Errors in Meta's shape ``{"error": {"message", "type", "code", "error_data": {"messaging_product",
  "details"}, "fbtrace_id"}}``: a wrong or missing token 401 (#190), a wrong phone number id or unknown
  media 400 (#100), a malformed message 400 (#100 or #131009), an unknown template 404 (#132001), a wrong
  parameter count 400 (#132000). ``throttle()``: every message but a read receipt is refused as Meta refuses
  one past the number's throughput, 400 (#130429 Rate limit hit), until ``throttle(False)``; ``refused``
  counts them.

Meta's side of the webhook: ``connect(url, app_secret)``, then ``user_text(sender, text)``,
``user_media(sender, kind, data, mime)``, ``deliver(payload)`` post a signed webhook (``X-Hub-Signature-256``)
as Meta does and return the HTTP status; ``timestamp=`` sets the message's time (the window counts from
it). Observing: ``sent(to)`` the messages delivered to a number, ``failed(to)`` those the window stopped,
``read_receipts()``, ``typing()``, ``requests`` every call.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import requests

from tests.fakes._http import FakeHandler, FakeServer, multipart_parts

VERSION = "v21.0"
MAX_TEXT = 4096
MAX_CAPTION = 1024
MAX_TEMPLATE_PARAM = 1024
WINDOW_SECONDS = 24 * 3600
URL_SECONDS = 300  # a media URL lasts five minutes
MEDIA_LIMITS = {"image": 5 * 2**20, "audio": 16 * 2**20, "document": 100 * 2**20, "sticker": 100 * 2**10}
MEDIA_TYPES = {
    "image": {"image/jpeg", "image/png"},
    "audio": {"audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"},
    "sticker": {"image/webp"},
}
_WA_ID = re.compile(r"^[1-9][0-9]{6,14}$")


class GraphError(Exception):
    def __init__(self, status: int, code: int, message: str, details: str = "", kind: str = "OAuthException") -> None:
        super().__init__(message)
        self.status, self.code, self.kind, self.details = status, code, kind, details

    def body(self) -> dict:
        error: dict[str, Any] = {"message": self.args[0], "type": self.kind, "code": self.code}
        if self.details:
            error["error_data"] = {"messaging_product": "whatsapp", "details": self.details}
        error["fbtrace_id"] = "A" + secrets.token_hex(10)
        return {"error": error}


def signature(app_secret: str, body: bytes) -> str:
    """``X-Hub-Signature-256``'s value: ``sha256=`` and the hex HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()


class FakeGraphAPI:
    def __init__(self, phone_number_id: str = "106540352242922", token: str = "EAAG-test-token") -> None:
        self.phone_number_id = phone_number_id
        self.display_number = "15550001234"
        self.token = token
        self.requests: list[dict] = []
        self.messages: list[dict] = []  # every accepted send: {"to", "type", "payload", "id", "delivered"}
        self.receipts: list[dict] = []
        self.templates: dict[tuple[str, str], int] = {}
        self.media: dict[str, dict] = {}
        self.downloads: dict[str, tuple[str, float]] = {}  # URL token -> (media id, expiry)
        self.last_inbound: dict[str, float] = {}  # wa_id -> the timestamp of their last message
        self.inbound_ids: set[str] = set()
        self.webhook_url = ""
        self.app_secret = ""
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.throttled = False  # every message refused with #130429 (sending again later works)
        self.refused = 0
        self.server: FakeServer | None = None  # made by start(): the payload builders need no server

    # -- running ---------------------------------------------------------------------------

    def start(self) -> FakeGraphAPI:
        self.server = FakeServer(_Handler, self).start("fake-graph-api")
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    def __enter__(self) -> FakeGraphAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self.server is not None, "start() the fake first"
        return f"http://127.0.0.1:{self.server.server_address[1]}/{VERSION}"

    # -- Meta's side of the webhook --------------------------------------------------------

    def connect(self, url: str, app_secret: str) -> None:
        self.webhook_url, self.app_secret = url, app_secret

    def throttle(self, on: bool = True) -> None:
        """Every message but a read receipt refused with #130429 while ``on``."""
        self.throttled = on

    def add_template(self, name: str, language: str = "en_US", params: int = 1) -> None:
        self.templates[(name, language)] = params

    def deliver(self, payload: dict, *, sign: bool = True, secret: str | None = None) -> int:
        """POST ``payload`` to the webhook as Meta does (signed with the app secret unless ``sign`` is False)."""
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        if sign:
            headers["X-Hub-Signature-256"] = signature(secret if secret is not None else self.app_secret, body)
        return requests.post(self.webhook_url, data=body, headers=headers, timeout=30).status_code

    def message_event(self, sender: str, message: dict, *, name: str = "Owner") -> dict:
        """The webhook payload of one message from ``sender`` (digits, no +)."""
        value = {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": self.display_number, "phone_number_id": self.phone_number_id},
            "contacts": [{"profile": {"name": name}, "wa_id": sender}],
            "messages": [{"from": sender, **message}],
        }
        return {
            "object": "whatsapp_business_account",
            "entry": [{"id": "WABA1", "changes": [{"value": value, "field": "messages"}]}],
        }

    def inbound(self, sender: str, kind: str, body: dict, *, timestamp: float | None = None, **extra: Any) -> dict:
        """A message of ``kind`` from ``sender``, recorded as the platform's (the window counts from it)."""
        when = time.time() if timestamp is None else timestamp
        wamid = "wamid.IN" + secrets.token_hex(12).upper()
        with self._lock:
            self.inbound_ids.add(wamid)
            self.last_inbound[sender] = max(self.last_inbound.get(sender, 0.0), when)
        return {"id": wamid, "timestamp": str(int(when)), "type": kind, kind: body, **extra}

    def user_text(self, sender: str, text: str, *, timestamp: float | None = None, **extra: Any) -> tuple[str, int]:
        """``sender`` writes ``text``: (the message's id, the webhook's HTTP status)."""
        message = self.inbound(sender, "text", {"body": text}, timestamp=timestamp, **extra)
        return message["id"], self.deliver(self.message_event(sender, message))

    def user_media(
        self, sender: str, kind: str, data: bytes, mime: str, *, caption: str = "", filename: str = "", **extra: Any
    ) -> tuple[str, int]:
        """``sender`` sends a picture, voice note, audio or document: the media is stored for ``GET /<id>``."""
        media_id = self.store_media(data, mime)
        body: dict[str, Any] = {"id": media_id, "mime_type": mime, "sha256": hashlib.sha256(data).hexdigest()}
        if caption and kind in ("image", "document", "video"):
            body["caption"] = caption
        if filename and kind == "document":
            body["filename"] = filename
        if kind == "audio" and extra.pop("voice", False):
            body["voice"] = True
        message = self.inbound(sender, kind, body, **extra)
        return message["id"], self.deliver(self.message_event(sender, message))

    def status_event(self, message_id: str, recipient: str, status: str, errors: list[dict] | None = None) -> dict:
        value: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": self.display_number, "phone_number_id": self.phone_number_id},
            "statuses": [
                {"id": message_id, "status": status, "timestamp": str(int(time.time())), "recipient_id": recipient}
                | ({"errors": errors} if errors else {})
            ],
        }
        return {
            "object": "whatsapp_business_account",
            "entry": [{"id": "WABA1", "changes": [{"value": value, "field": "messages"}]}],
        }

    def store_media(self, data: bytes, mime: str) -> str:
        media_id = str(next(self._ids) + 900_000_000_000)
        with self._lock:
            self.media[media_id] = {"data": data, "mime": mime}
        return media_id

    # -- observing -------------------------------------------------------------------------

    def sent(self, to: str) -> list[dict]:
        """Messages delivered to ``to``: ``{"type", "payload", "id"}`` in order."""
        with self._lock:
            return [m for m in self.messages if m["to"] == to and m["delivered"]]

    def texts(self, to: str) -> list[str]:
        return [m["payload"]["text"]["body"] for m in self.sent(to) if m["type"] == "text"]

    def failed(self, to: str) -> list[dict]:
        with self._lock:
            return [m for m in self.messages if m["to"] == to and not m["delivered"]]

    def read_receipts(self) -> list[dict]:
        with self._lock:
            return list(self.receipts)

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 20) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = predicate()
            if got:
                return got
            time.sleep(0.01)
        raise AssertionError("timed out waiting on the fake Graph API")

    # -- the API ---------------------------------------------------------------------------

    def authorize(self, header: str | None) -> None:
        scheme, _, token = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), self.token.encode()):
            raise GraphError(401, 190, "Invalid OAuth access token - Cannot parse access token")

    def post_message(self, phone_id: str, body: dict) -> dict:
        self._check_phone(phone_id)
        if body.get("messaging_product") != "whatsapp":
            raise GraphError(400, 100, "(#100) The parameter messaging_product is required.")
        if body.get("status") == "read":
            return self._read(body)
        if self.throttled:
            self.refused += 1
            raise GraphError(400, 130429, "(#130429) Rate limit hit", "Cloud API message throughput has been reached.")
        to = str(body.get("to") or "").lstrip("+")
        if not _WA_ID.match(to):
            raise GraphError(400, 100, "(#100) Invalid parameter", "to must be a phone number or WhatsApp ID")
        kind = body.get("type", "text")
        check = {"text": self._check_text, "template": self._check_template}.get(kind)
        if check is None and kind in ("image", "document", "audio", "sticker"):
            check = self._check_media_message
        if check is None:
            raise GraphError(400, 131009, "(#131009) Parameter value is not valid", f"unsupported type {kind!r}")
        check(kind, body)
        context = body.get("context")
        if context is not None and not (isinstance(context, dict) and isinstance(context.get("message_id"), str)):
            raise GraphError(400, 100, "(#100) Invalid parameter", "context.message_id must be a string")
        wamid = "wamid.OUT" + secrets.token_hex(12).upper()
        with self._lock:
            delivered = kind == "template" or time.time() - self.last_inbound.get(to, 0.0) <= WINDOW_SECONDS
            self.messages.append({"to": to, "type": kind, "payload": body, "id": wamid, "delivered": delivered})
        if not delivered and self.webhook_url:
            error = {
                "code": 131047,
                "title": "Re-engagement message",
                "message": "Re-engagement message",
                "error_data": {
                    "details": "Message failed to send because more than 24 hours have passed "
                    "since the customer last replied to this number."
                },
            }
            event = self.status_event(wamid, to, "failed", [error])
            threading.Thread(target=self.deliver, args=(event,), daemon=True).start()
        answer: dict[str, Any] = {"id": wamid}
        if kind == "template":
            answer["message_status"] = "accepted"
        return {"messaging_product": "whatsapp", "contacts": [{"input": body["to"], "wa_id": to}], "messages": [answer]}

    def _check_phone(self, phone_id: str) -> None:
        if phone_id != self.phone_number_id:
            raise GraphError(
                400,
                100,
                f"Unsupported post request. Object with ID '{phone_id}' does not exist, cannot be loaded due to "
                "missing permissions, or does not support this operation.",
                kind="GraphMethodException",
            )

    def _read(self, body: dict) -> dict:
        message_id = body.get("message_id")
        with self._lock:
            known = message_id in self.inbound_ids
        if not known:
            raise GraphError(400, 100, "(#100) Invalid parameter", "message_id is not a message this number received")
        typing = body.get("typing_indicator")
        if typing is not None and typing != {"type": "text"}:
            raise GraphError(400, 100, "(#100) Invalid parameter", "typing_indicator.type must be text")
        with self._lock:
            self.receipts.append({"message_id": message_id, "typing": typing is not None})
        return {"success": True}

    def _check_text(self, kind: str, body: dict) -> None:
        text = body.get("text")
        value = text.get("body") if isinstance(text, dict) else None
        if not isinstance(value, str) or not value.strip():
            raise GraphError(400, 100, "(#100) The parameter text['body'] is required.")
        if len(value) > MAX_TEXT:
            raise GraphError(400, 100, "(#100) Param text['body'] must be at most 4096 characters long.")

    def _check_media_message(self, kind: str, body: dict) -> None:
        media = body.get(kind)
        if not isinstance(media, dict) or ("id" in media) == ("link" in media):
            raise GraphError(400, 131009, "(#131009) Parameter value is not valid", f"{kind} needs one of id or link")
        if "id" in media and media["id"] not in self.media:
            raise GraphError(400, 131053, "(#131053) Media upload error", f"unknown media id {media['id']}")
        allowed = {"id", "link"} | ({"caption"} if kind in ("image", "document") else set())
        allowed |= {"filename"} if kind == "document" else set()
        extra = set(media) - allowed
        if extra:
            raise GraphError(400, 100, "(#100) Invalid parameter", f"{kind} does not take {sorted(extra)}")
        if len(str(media.get("caption", ""))) > MAX_CAPTION:
            raise GraphError(400, 100, "(#100) Invalid parameter", "caption must be at most 1024 characters")

    def _check_template(self, kind: str, body: dict) -> None:
        template = body.get("template")
        if not isinstance(template, dict) or not isinstance(template.get("language"), dict):
            raise GraphError(400, 100, "(#100) The parameter template['language'] is required.")
        key = (template.get("name"), template["language"].get("code"))
        if key not in self.templates:
            raise GraphError(404, 132001, "(#132001) Template name does not exist in the translation", str(key))
        params = [p for c in template.get("components", []) if c.get("type") == "body" for p in c.get("parameters", [])]
        if len(params) != self.templates[key]:
            raise GraphError(400, 132000, "(#132000) Number of parameters does not match the expected number of params")
        for param in params:
            text = param.get("text") if param.get("type") == "text" else None
            if not isinstance(text, str) or not text or len(text) > MAX_TEMPLATE_PARAM:
                raise GraphError(400, 132018, "(#132018) There was an issue with the parameters in your template.")
            if "\n" in text or "\t" in text or "     " in text:
                raise GraphError(
                    400,
                    132018,
                    "(#132018) There was an issue with the parameters in your template.",
                    "Param text cannot have new-line/tab characters or more than 4 consecutive spaces",
                )

    def upload(self, phone_id: str, content_type: str, raw: bytes) -> dict:
        self._check_phone(phone_id)
        parts = {name: (filename, ctype, data) for name, filename, ctype, data in multipart_parts(content_type, raw)}
        if parts.get("messaging_product", (None, None, b""))[2] != b"whatsapp" or "file" not in parts:
            raise GraphError(400, 100, "(#100) The parameter messaging_product is required.")
        _, file_type, data = parts["file"]
        mime = parts.get("type", (None, None, file_type.encode()))[2].decode()
        group = next((g for g, types in MEDIA_TYPES.items() if mime in types), "document")
        if len(data) > MEDIA_LIMITS[group]:
            raise GraphError(400, 131053, "(#131053) Media upload error", f"{group} over {MEDIA_LIMITS[group]} bytes")
        return {"id": self.store_media(data, mime)}

    def media_info(self, media_id: str, host: str) -> dict:
        with self._lock:
            media = self.media.get(media_id)
        if media is None:
            raise GraphError(400, 100, f"Unsupported get request. Object with ID '{media_id}' does not exist.")
        token = secrets.token_urlsafe(16)
        with self._lock:
            self.downloads[token] = (media_id, time.time() + URL_SECONDS)
        return {
            "messaging_product": "whatsapp",
            "url": f"http://{host}/media-download/{token}",
            "mime_type": media["mime"],
            "sha256": hashlib.sha256(media["data"]).hexdigest(),
            "file_size": len(media["data"]),
            "id": media_id,
        }

    def download(self, token: str) -> bytes | None:
        with self._lock:
            media_id, until = self.downloads.get(token, ("", 0.0))
            return self.media[media_id]["data"] if media_id and time.time() < until else None


class _Handler(FakeHandler):
    server_header = "proxygen-bolt"

    def _record(self, body: Any) -> None:
        with self.server.fake._lock:
            self.server.fake.requests.append({"method": self.command, "path": self.path, "body": body})

    def _fail(self, err: GraphError) -> None:
        self.send_json(err.status, err.body())

    def do_GET(self) -> None:
        fake: FakeGraphAPI = self.server.fake
        path = urlparse(self.path).path
        self._record(None)
        try:
            fake.authorize(self.headers.get("Authorization"))
            if path.startswith("/media-download/"):
                data = fake.download(path.rsplit("/", 1)[1])
                if data is None:
                    self.send(404, b"URL signature expired", "text/plain")
                    return
                self.send(200, data, "application/octet-stream")
                return
            match = re.fullmatch(rf"/{VERSION}/([0-9]+)", path)
            if match is None:
                raise GraphError(400, 2500, "Unknown path components", kind="OAuthException")
            if match[1] == fake.phone_number_id:
                number = {"display_phone_number": "+1 555-000-1234", "verified_name": "Assistant", "id": match[1]}
                self.send_json(200, number)
                return
            self.send_json(200, fake.media_info(match[1], self.headers.get("Host", "127.0.0.1")))
        except GraphError as err:
            self._fail(err)

    def do_POST(self) -> None:
        fake: FakeGraphAPI = self.server.fake
        raw = self.read_body()
        path = urlparse(self.path).path
        content_type = self.headers.get("Content-Type", "")
        try:
            fake.authorize(self.headers.get("Authorization"))
            match = re.fullmatch(rf"/{VERSION}/([^/]+)/(messages|media)", path)
            if match is None:
                raise GraphError(400, 2500, "Unknown path components", kind="OAuthException")
            if match[2] == "media":
                self._record({"upload": len(raw)})
                self.send_json(200, fake.upload(match[1], content_type, raw))
                return
            try:
                body = json.loads(raw)
            except ValueError:
                raise GraphError(400, 100, "(#100) Invalid parameter", "the body is not JSON") from None
            self._record(body)
            if not isinstance(body, dict):
                raise GraphError(400, 100, "(#100) Invalid parameter", "the body must be an object")
            self.send_json(200, fake.post_message(match[1], body))
        except GraphError as err:
            self._fail(err)
