"""A fake of Slack's Web API (the methods the Slack channel calls), and Slack's side of the Events API.

A stdlib server on 127.0.0.1 (tests.fakes._http). Point the channel at it with ``slack.base_url =
fake.base_url`` (``http://127.0.0.1:<port>/api/``). What it answers, as Slack documents its Web API:

- Every method is ``POST /api/<method>`` with the token as ``Authorization: Bearer xoxb-...`` (or a ``token``
  form field), the arguments as JSON or form fields. The answer is HTTP 200 with ``{"ok": true, ...}``, or HTTP
  200 with ``{"ok": false, "error": "<code>"}``: no token ``not_authed``, a wrong one ``invalid_auth``, an
  unknown method HTTP 404 ``unknown_method``.
- Rate limits: ``ratelimit(method, times, retry_after)`` makes the next calls of ``method`` answer HTTP 429
  with ``Retry-After: <seconds>`` and ``{"ok": false, "error": "ratelimited"}``, as Slack's tiers do.
- ``auth.test``: ``{"ok", "url", "team", "user", "team_id", "user_id", "bot_id"}``.
- ``chat.postMessage``: ``channel`` (a DM or channel the fake knows, else ``channel_not_found``), ``text``
  (else ``no_text``; more than 40,000 characters ``msg_too_long``), optional ``thread_ts`` (a message of that
  channel, else ``thread_not_found``): ``{"ok", "channel", "ts", "message"}``.
- ``blocks`` (both methods, optional): Block Kit, checked as Slack does (``invalid_blocks``): at most 50 blocks,
  a section's text at most 3,000 characters, an actions block's buttons each with a plain_text label of at most
  75 characters, an ``action_id`` unique in the message and a ``value`` of at most 2,000.
- ``chat.update``: ``channel``, ``ts`` (a message of that channel, else ``message_not_found``; one the bot did not
  post ``cant_update_message``), ``text`` (the same bounds): ``{"ok", "channel", "ts", "text", "message"}``.
- ``conversations.open``: ``users`` (one known user id, else ``user_not_found``): ``{"ok", "channel": {"id"}}``.
- ``conversations.list``: ``types`` (comma-separated; ``im`` gives the bot's DMs ``{"id", "is_im": true, "user"}``,
  the others none here): ``{"ok", "channels", "response_metadata": {"next_cursor": ""}}``.
- ``conversations.history``: ``channel`` (known, else ``channel_not_found``), optional ``oldest`` (a ``ts``): the
  channel's messages after it, newest first, ``{"type": "message", "user", "text", "ts"}`` (a thread's replies
  left out): ``{"ok", "messages", "has_more": false}``.
- Files in: ``user_file(user, name, mimetype, data, text)`` is the ``file_share`` message of ``user`` sharing a
  file in their DM; its ``url_private`` (``GET /files-pri/<team>-<id>/<name>``) answers the bytes only with the
  bot token as ``Authorization: Bearer`` (else 403; Slack shows its sign-in page instead).
- Files out, Slack's three steps: ``files.getUploadURLExternal`` (``filename``, ``length`` in bytes, else
  ``invalid_arguments``): ``{"ok", "upload_url", "file_id"}``; a ``POST`` of the raw bytes to ``upload_url`` (once;
  another or an unknown one is 404); ``files.completeUploadExternal`` (``files``: a JSON list of ``{"id",
  "title"}``, each uploaded with exactly its ``length`` else ``file_not_found``/``file_upload_size_mismatch``;
  ``channel_id``, optional ``thread_ts`` and ``initial_comment``): the files shared in the channel as one
  message, ``{"ok", "files": [{"id", "title", "name"}]}``. ``shared(channel)`` lists them with their bytes.
- ``apps.connections.open`` takes the app-level token (``xapp-...``; a bot token is ``not_allowed_token_type``, a
  wrong one ``invalid_auth``): ``{"ok", "url"}``, a ``ws://`` URL of the fake's Socket Mode server
  (tests/fakes/slack_socket.py, started by ``socket_mode()``), which delivers events as envelopes.

A slash command: ``slash(user, "/name text", channel)`` is the form Slack posts for a registered command typed
(``command``, ``text`` with ``&``, ``<`` and ``>`` escaped, ``user_id``, ``channel_id``, ``channel_name``:
``directmessage`` in a DM, ``response_url``, ``trigger_id``, ...), which ``deliver_command`` posts signed like the
events (any form: Slack's ``ssl_check=1`` too), waiting Slack's three seconds for the answer; over Socket Mode
``socket.send(fields, "slash_commands")``.

A button pressed: ``press(user, channel, ts, action_id)`` is the ``block_actions`` payload of ``user`` pressing a
button of the bot's message, which ``deliver_form`` posts as Slack does (``payload=<json>`` form data, signed).

Slack's side of the Events API: ``connect(url, signing_secret)``, then ``dm(user, text)`` and ``mention(user,
channel, text)`` build an ``event_callback`` payload and ``deliver(payload)`` posts it signed as Slack does
(``X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:<timestamp>:<body>">``, ``X-Slack-Request-Timestamp``;
``timestamp=`` an older one, ``secret=`` a wrong one, ``retry_num=`` a retry's headers). Observing:
``posted(channel)`` the messages as they show now (after their updates), ``updates(channel)``, ``requests``.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlparse

import requests

from tests.fakes._http import FakeHandler, FakeServer
from tests.fakes.slack_socket import FakeSocketMode

MAX_TEXT = 40_000


class SlackError(Exception):
    def __init__(self, code: str, status: int = 200, headers: dict[str, str] | None = None) -> None:
        super().__init__(code)
        self.code, self.status, self.headers = code, status, headers or {}


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``X-Slack-Signature``'s value: ``v0=`` and the hex HMAC-SHA256 of ``v0:<timestamp>:<body>``."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


class FakeSlackAPI:
    def __init__(
        self,
        token: str = "xoxb-test-token-0001",
        team_id: str = "T0TEAM001",
        app_token: str = "xapp-1-A0APP00001-1-ab12",
    ) -> None:
        self.token = token
        self.app_token = app_token
        self.socket: FakeSocketMode | None = None  # Socket Mode's server, once ``socket_mode()`` started it
        self.team_id = team_id
        self.bot_user = "U0BOT00001"
        self.bot_id = "B0BOT00001"
        self.requests: list[dict] = []
        self.messages: list[dict] = []  # {"channel", "ts", "text", "thread_ts", "user", "history": [texts]}
        self.dms: dict[str, str] = {}  # user id -> their DM channel with the bot
        self.channels: set[str] = set()
        self.files: dict[str, dict[str, Any]] = {}  # file id -> {"name", "mimetype", "data", "length", ...}
        self.uploads: dict[str, str] = {}  # an upload URL's ticket -> the file id it takes
        self.downloads: list[dict[str, Any]] = []  # every GET of a file: {"path", "authorization"}
        self.limits: dict[str, tuple[int, float]] = {}  # method -> (calls still refused, Retry-After)
        self.webhook_url = ""
        self.signing_secret = ""
        self.last_sent: tuple[bytes, dict[str, str]] = (b"", {})
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.server: FakeServer | None = None

    # -- running ---------------------------------------------------------------------------

    def start(self) -> FakeSlackAPI:
        self.server = FakeServer(_Handler, self).start("fake-slack-api")
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        if self.socket is not None:
            self.socket.stop()

    def socket_mode(self, ack_timeout: float = 3.0) -> FakeSocketMode:
        """Start Socket Mode's websocket server (``apps.connections.open`` answers its URLs)."""
        if self.socket is None:
            self.socket = FakeSocketMode(ack_timeout=ack_timeout).start()
        return self.socket

    def __enter__(self) -> FakeSlackAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self.server is not None, "start() the fake first"
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/"

    # -- the workspace ---------------------------------------------------------------------

    def add_user(self, user: str) -> str:
        """A member of the workspace; their DM channel with the bot."""
        with self._lock:
            if user not in self.dms:
                self.dms[user] = f"D{next(self._ids):08d}"
                self.channels.add(self.dms[user])
            return self.dms[user]

    def add_channel(self, channel: str) -> None:
        with self._lock:
            self.channels.add(channel)

    def ratelimit(self, method: str, times: int = 1, retry_after: float = 1) -> None:
        with self._lock:
            self.limits[method] = (times, retry_after)

    def _ts(self) -> str:
        return f"{int(time.time())}.{next(self._ids):06d}"

    # -- Slack's side of the Events API ----------------------------------------------------

    def connect(self, url: str, signing_secret: str) -> None:
        self.webhook_url, self.signing_secret = url, signing_secret

    def event(self, event: dict) -> dict:
        """An ``event_callback`` payload around ``event``, with a fresh ``event_id``."""
        return {
            "token": "deprecated-verification-token",
            "team_id": self.team_id,
            "api_app_id": "A0APP00001",
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{next(self._ids):010d}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": self.team_id, "user_id": self.bot_user, "is_bot": True}],
        }

    def _inbound(self, channel: str, user: str, text: str, thread_ts: str | None) -> dict:
        ts = self._ts()
        message: dict[str, Any] = {"channel": channel, "ts": ts, "text": text, "thread_ts": thread_ts, "user": user}
        with self._lock:
            self.messages.append({**message, "history": [text]})
        event = {"user": user, "text": text, "ts": ts, "channel": channel, "event_ts": ts}
        return event | ({"thread_ts": thread_ts} if thread_ts else {})

    def dm(self, user: str, text: str, thread_ts: str | None = None) -> dict:
        """The payload of ``user`` writing ``text`` to the bot in their DM."""
        event = self._inbound(self.add_user(user), user, text, thread_ts)
        return self.event({"type": "message", "channel_type": "im", **event})

    def mention(self, user: str, channel: str, text: str, thread_ts: str | None = None) -> dict:
        """The ``app_mention`` payload of ``user`` writing ``<@bot> text`` in ``channel``."""
        self.add_channel(channel)
        event = self._inbound(channel, user, f"<@{self.bot_user}> {text}", thread_ts)
        return self.event({"type": "app_mention", **event})

    def user_file(self, user: str, name: str, mimetype: str, data: bytes, text: str = "") -> dict:
        """The ``file_share`` payload of ``user`` sharing the file ``name`` (with ``text``) in their DM."""
        file_id = f"F{next(self._ids):08d}"
        assert self.server is not None
        url = f"http://127.0.0.1:{self.server.server_address[1]}/files-pri/{self.team_id}-{file_id}/{name}"
        with self._lock:
            self.files[file_id] = {"name": name, "mimetype": mimetype, "data": data, "length": len(data), "url": url}
        shown = {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1],
            "size": len(data),
            "mode": "hosted",
            "url_private": url,
            "url_private_download": url.replace("/files-pri/", "/files-pri-download/"),
        }
        event = self._inbound(self.add_user(user), user, text, None)
        return self.event({"type": "message", "subtype": "file_share", "channel_type": "im", "files": [shown], **event})

    def file_bytes(self, path: str, auth: str | None) -> bytes | None:
        """The bytes behind a ``url_private`` path, for the bot token only."""
        with self._lock:
            self.downloads.append({"path": path, "authorization": auth})
        if (auth or "").removeprefix("Bearer ").strip() != self.token:
            return None
        with self._lock:
            found = [f for f in self.files.values() if f["url"].endswith(path)]
            return found[0]["data"] if found else None

    def press(self, user: str, channel: str, ts: str, action_id: str) -> dict:
        """The ``block_actions`` payload of ``user`` pressing the button ``action_id`` of the message ``ts``."""
        with self._lock:
            message = self._message(channel, ts)
            assert message is not None and message.get("blocks"), "no message with buttons there"
            shown = {k: message[k] for k in ("ts", "text", "user")} | {"type": "message", "blocks": message["blocks"]}
        found = [
            (block, element)
            for block in message["blocks"]
            for element in block.get("elements") or []
            if element.get("action_id") == action_id
        ]
        assert found, f"no button {action_id} on that message"
        block, button = found[0]
        action = {k: button[k] for k in ("action_id", "text", "value", "type")} | {"block_id": block.get("block_id")}
        return {
            "type": "block_actions",
            "user": {"id": user, "username": user.lower(), "team_id": self.team_id},
            "api_app_id": "A0APP00001",
            "token": "deprecated-verification-token",
            "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": False},
            "trigger_id": f"{next(self._ids)}.{self.team_id}",
            "team": {"id": self.team_id},
            "channel": {"id": channel, "name": "directmessage"},
            "message": shown,
            "response_url": "https://hooks.slack.com/actions/T0TEAM001/1/x",
            "actions": [action | {"action_ts": self._ts()} | ({"style": button["style"]} if "style" in button else {})],
        }

    def slash(self, user: str, line: str, channel: str | None = None) -> dict[str, str]:
        """The fields of ``user`` typing the registered command ``line`` (``/name text``) in ``channel`` (their DM
        with the bot by default), as Slack sends a ``slash_commands`` request."""
        command, _, text = line.partition(" ")
        channel = channel or self.add_user(user)
        self.add_channel(channel)
        with self._lock:
            direct = channel in self.dms.values()
        return {
            "token": "deprecated-verification-token",
            "team_id": self.team_id,
            "team_domain": "example-team",
            "channel_id": channel,
            "channel_name": "directmessage" if direct else "general",
            "user_id": user,
            "user_name": user.lower(),
            "command": command,
            "text": text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"),  # Slack's escapes
            "api_app_id": "A0APP00001",
            "is_enterprise_install": "false",
            "response_url": f"https://hooks.slack.com/commands/{self.team_id}/{next(self._ids)}/x",
            "trigger_id": f"{next(self._ids)}.{self.team_id}",
        }

    def deliver_command(self, fields: dict[str, str], *, secret: str | None = None) -> requests.Response:
        """POST a slash command's ``fields`` to the request URL as Slack does: form data, signed; Slack waits three
        seconds for the answer (a later one is a timeout: here ``requests``' ReadTimeout)."""
        return self._post(urlencode(fields).encode(), "application/x-www-form-urlencoded", secret=secret, wait=3)

    def deliver_form(self, payload: dict, *, secret: str | None = None) -> requests.Response:
        """POST an interactive ``payload`` to the request URL as Slack does: ``payload=<json>`` form data, signed."""
        body = urlencode({"payload": json.dumps(payload)}).encode()
        return self._post(body, "application/x-www-form-urlencoded", secret=secret)

    def deliver(
        self,
        payload: dict,
        *,
        timestamp: float | None = None,
        secret: str | None = None,
        sign: bool = True,
        retry_num: int | None = None,
    ) -> requests.Response:
        """POST ``payload`` to the request URL as Slack does: signed with the signing secret at ``timestamp``."""
        return self._post(
            json.dumps(payload).encode(),
            "application/json",
            timestamp=timestamp,
            secret=secret,
            sign=sign,
            retry_num=retry_num,
        )

    def _post(
        self,
        body: bytes,
        content_type: str,
        *,
        timestamp: float | None = None,
        secret: str | None = None,
        sign: bool = True,
        retry_num: int | None = None,
        wait: float = 30,
    ) -> requests.Response:
        stamp = str(int(time.time() if timestamp is None else timestamp))
        headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": stamp}
        if sign:
            headers["X-Slack-Signature"] = signature(self.signing_secret if secret is None else secret, stamp, body)
        if retry_num is not None:
            headers |= {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"}
        self.last_sent = (body, headers)
        return requests.post(self.webhook_url, data=body, headers=headers, timeout=wait)

    def send_again(self) -> requests.Response:
        """The last request posted to the request URL, byte for byte (its timestamp and signature): a recorded
        request replayed."""
        body, headers = self.last_sent
        return requests.post(self.webhook_url, data=body, headers=headers, timeout=30)

    # -- observing -------------------------------------------------------------------------

    def posted(self, channel: str) -> list[dict]:
        """The bot's messages in ``channel`` as they show now."""
        with self._lock:
            return [dict(m) for m in self.messages if m["channel"] == channel and m["user"] == self.bot_user]

    def shared(self, channel: str) -> list[dict]:
        """The files the bot shared in ``channel``: name, title, data, thread_ts, comment."""
        with self._lock:
            return [dict(f) for f in self.files.values() if f.get("channel") == channel]

    def calls(self, method: str) -> list[dict]:
        with self._lock:
            return [r["args"] for r in self.requests if r["method"] == method]

    def call_times(self, method: str) -> list[float]:
        """When each call of ``method`` came (time.monotonic())."""
        with self._lock:
            return [r["at"] for r in self.requests if r["method"] == method]

    # -- the Web API -----------------------------------------------------------------------

    def call(self, method: str, auth: str | None, args: dict[str, Any]) -> dict:
        with self._lock:
            self.requests.append({"method": method, "args": args, "at": time.monotonic()})
            refused, retry_after = self.limits.get(method, (0, 0))
            if refused:
                self.limits[method] = (refused - 1, retry_after)
                raise SlackError("ratelimited", 429, {"Retry-After": f"{retry_after:g}"})
        token = (auth or "").removeprefix("Bearer ").strip() or str(args.get("token") or "")
        if not token:
            raise SlackError("not_authed")
        if method == "apps.connections.open":
            return self.connections_open(token)
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            raise SlackError("invalid_auth")
        handler = _METHODS.get(method)
        if handler is None:
            raise SlackError("unknown_method", 404)
        return handler(self, args)

    def auth_test(self, args: dict[str, Any]) -> dict:
        return {
            "url": "https://example-team.slack.com/",
            "team": "Example Team",
            "user": "assistant",
            "team_id": self.team_id,
            "user_id": self.bot_user,
            "bot_id": self.bot_id,
        }

    def _blocks(self, args: dict[str, Any]) -> list[dict] | None:
        blocks = args.get("blocks")
        if blocks is None:
            return None
        if isinstance(blocks, str):
            try:
                blocks = json.loads(blocks)
            except ValueError:
                raise SlackError("invalid_blocks_format") from None
        if not isinstance(blocks, list) or len(blocks) > 50 or not all(isinstance(b, dict) for b in blocks):
            raise SlackError("invalid_blocks")
        action_ids: list[str] = []
        for block in blocks:
            if block.get("type") == "section" and len(str((block.get("text") or {}).get("text") or "")) > 3000:
                raise SlackError("invalid_blocks")
            for element in block.get("elements") or [] if block.get("type") == "actions" else []:
                label = element.get("text") or {}
                if label.get("type") != "plain_text" or not 0 < len(str(label.get("text") or "")) <= 75:
                    raise SlackError("invalid_blocks")
                if len(str(element.get("value") or "")) > 2000 or not element.get("action_id"):
                    raise SlackError("invalid_blocks")
                action_ids.append(str(element["action_id"]))
        if len(action_ids) != len(set(action_ids)):
            raise SlackError("invalid_blocks")
        return blocks

    def _text(self, args: dict[str, Any]) -> str:
        text = args.get("text")
        if not isinstance(text, str) or not text:
            raise SlackError("no_text")
        if len(text) > MAX_TEXT:
            raise SlackError("msg_too_long")
        return text

    def _message(self, channel: str, ts: str) -> dict | None:
        return next((m for m in self.messages if m["channel"] == channel and m["ts"] == ts), None)

    def post_message(self, args: dict[str, Any]) -> dict:
        channel = str(args.get("channel") or "")
        if channel not in self.channels:
            raise SlackError("channel_not_found")
        text = self._text(args)
        blocks = self._blocks(args)
        thread_ts = args.get("thread_ts") or None
        with self._lock:
            if thread_ts is not None and self._message(channel, str(thread_ts)) is None:
                raise SlackError("thread_not_found")
            ts = self._ts()
            message = {"channel": channel, "ts": ts, "text": text, "thread_ts": thread_ts, "user": self.bot_user}
            self.messages.append({**message, "history": [text], "blocks": blocks})
        shown = {"type": "message", "text": text, "user": self.bot_user, "bot_id": self.bot_id, "ts": ts}
        return {"channel": channel, "ts": ts, "message": shown | ({"thread_ts": thread_ts} if thread_ts else {})}

    def update(self, args: dict[str, Any]) -> dict:
        channel, ts = str(args.get("channel") or ""), str(args.get("ts") or "")
        if channel not in self.channels:
            raise SlackError("channel_not_found")
        text = self._text(args)
        blocks = self._blocks(args)
        with self._lock:
            message = self._message(channel, ts)
            if message is None:
                raise SlackError("message_not_found")
            if message["user"] != self.bot_user:
                raise SlackError("cant_update_message")
            message["text"] = text
            if blocks is not None:
                message["blocks"] = blocks
            message["history"].append(text)
        return {"channel": channel, "ts": ts, "text": text, "message": {"type": "message", "text": text, "ts": ts}}

    def connections_open(self, token: str) -> dict:
        if not token.startswith("xapp-"):
            raise SlackError("not_allowed_token_type")
        if not hmac.compare_digest(token.encode(), self.app_token.encode()):
            raise SlackError("invalid_auth")
        if self.socket is None:
            raise SlackError("socket_mode_not_enabled")  # a fake's word: the test did not turn Socket Mode on
        return {"url": self.socket.open_url()}

    def upload_url(self, args: dict[str, Any]) -> dict:
        name, length = str(args.get("filename") or ""), str(args.get("length") or "")
        if not name or not length.isdigit():
            raise SlackError("invalid_arguments")
        file_id, ticket = f"F{next(self._ids):08d}", f"{next(self._ids):012d}"
        assert self.server is not None
        with self._lock:
            self.files[file_id] = {"name": name, "length": int(length), "data": None}
            self.uploads[ticket] = file_id
        return {
            "upload_url": f"http://127.0.0.1:{self.server.server_address[1]}/upload/v1/{ticket}",
            "file_id": file_id,
        }

    def upload(self, ticket: str, data: bytes) -> bool:
        with self._lock:
            file_id = self.uploads.pop(ticket, None)
            if file_id is None:
                return False
            self.files[file_id]["data"] = data
            return True

    def complete_upload(self, args: dict[str, Any]) -> dict:
        try:
            wanted = json.loads(str(args.get("files") or ""))
        except ValueError:
            raise SlackError("invalid_arguments") from None
        channel = str(args.get("channel_id") or "")
        if not isinstance(wanted, list) or not wanted or channel not in self.channels:
            raise SlackError("invalid_arguments" if channel in self.channels else "channel_not_found")
        thread_ts = args.get("thread_ts") or None
        with self._lock:
            if thread_ts is not None and self._message(channel, str(thread_ts)) is None:
                raise SlackError("thread_not_found")
            for one in wanted:
                got = self.files.get(str(one.get("id") if isinstance(one, dict) else ""))
                if got is None or got["data"] is None or "channel" in got:
                    raise SlackError("file_not_found")
                if len(got["data"]) != got["length"]:
                    raise SlackError("file_upload_size_mismatch")
            comment = str(args.get("initial_comment") or "")
            for one in wanted:
                self.files[one["id"]] |= {"channel": channel, "thread_ts": thread_ts, "comment": comment}
                self.files[one["id"]]["title"] = str(one.get("title") or self.files[one["id"]]["name"])
            text = comment or " ".join(self.files[one["id"]]["name"] for one in wanted)
            ts = self._ts()
            message = {"channel": channel, "ts": ts, "text": text, "thread_ts": thread_ts, "user": self.bot_user}
            self.messages.append({**message, "history": [text], "files": [one["id"] for one in wanted]})
            shown = [{"id": one["id"], "title": self.files[one["id"]]["title"], "name": self.files[one["id"]]["name"]}]
        return {"files": shown}

    def list_conversations(self, args: dict[str, Any]) -> dict:
        with self._lock:
            dms = [{"id": channel, "is_im": True, "user": user} for user, channel in self.dms.items()]
        wanted = str(args.get("types") or "public_channel").split(",")
        return {"channels": dms if "im" in wanted else [], "response_metadata": {"next_cursor": ""}}

    def history(self, args: dict[str, Any]) -> dict:
        channel, oldest = str(args.get("channel") or ""), float(args.get("oldest") or 0)
        with self._lock:
            if channel not in self.channels:
                raise SlackError("channel_not_found")
            found = [
                {"type": "message", "user": m["user"], "text": m["history"][-1], "ts": m["ts"]}
                for m in self.messages
                if m["channel"] == channel and float(m["ts"]) > oldest and not m.get("thread_ts")
            ]
        return {"messages": found[::-1], "has_more": False}

    def open_conversation(self, args: dict[str, Any]) -> dict:
        users = str(args.get("users") or "")
        if "," in users or users not in self.dms:
            raise SlackError("user_not_found")
        return {"channel": {"id": self.dms[users]}}


_METHODS = {
    "auth.test": FakeSlackAPI.auth_test,
    "chat.postMessage": FakeSlackAPI.post_message,
    "chat.update": FakeSlackAPI.update,
    "conversations.open": FakeSlackAPI.open_conversation,
    "conversations.list": FakeSlackAPI.list_conversations,
    "conversations.history": FakeSlackAPI.history,
    "files.getUploadURLExternal": FakeSlackAPI.upload_url,
    "files.completeUploadExternal": FakeSlackAPI.complete_upload,
}


class _Handler(FakeHandler):
    def do_GET(self) -> None:
        fake: FakeSlackAPI = self.server.fake
        path = urlparse(self.path).path
        data = fake.file_bytes(path, self.headers.get("Authorization")) if path.startswith("/files-pri") else None
        if data is None:
            self.send(403, b"sign in to Slack", "text/html")
            return
        self.send(200, data, "application/octet-stream")

    def do_POST(self) -> None:
        fake: FakeSlackAPI = self.server.fake
        url = urlparse(self.path)
        raw = self.read_body()
        if url.path.startswith("/upload/v1/"):
            ok = fake.upload(url.path.removeprefix("/upload/v1/"), raw)
            self.send(200 if ok else 404, b"OK - " + str(len(raw)).encode() if ok else b"not found", "text/plain")
            return
        args: dict[str, Any] = dict(parse_qsl(url.query))
        if self.headers.get("Content-Type", "").startswith("application/json"):
            try:
                args |= json.loads(raw or b"{}")
            except ValueError:
                self.send_json(200, {"ok": False, "error": "invalid_json"})
                return
        else:
            args |= dict(parse_qsl(raw.decode("utf-8", "replace")))
        try:
            answer = fake.call(url.path.removeprefix("/api/"), self.headers.get("Authorization"), args)
        except SlackError as err:
            self.send_json(err.status, {"ok": False, "error": err.code}, err.headers)
            return
        self.send_json(200, {"ok": True, **answer})
