"""A fake of Discord: the REST API (``/api/v10/...``, the calls the Discord channel makes through discord.py) and
the gateway (a websocket), on one aiohttp server on 127.0.0.1 in a thread of its own.

Point the channel at it with ``discord.base_url = fake.base_url``; its ``GET /gateway/bot`` gives the gateway's
address (``ws://127.0.0.1:<port>/gateway``). What it answers, as Discord documents it:

- Every REST call needs ``Authorization: Bot <token>`` (else 401 ``{"message": "401: Unauthorized", "code": 0}``)
  and carries the rate-limit headers (``X-RateLimit-Limit``, ``-Remaining``, ``-Reset``, ``-Reset-After``,
  ``-Bucket``). ``ratelimit(route, times, retry_after)`` makes the next calls of ``route`` (``"POST
  /channels/{channel_id}/messages"``) answer 429 with ``{"message", "retry_after", "global": false}``,
  ``Retry-After`` and ``Via`` (a 429 without ``Via`` is Cloudflare's ban, not a rate limit). ``outage(route)``
  makes every call of ``route`` answer 503 ``{"message": "503: Service Unavailable", "code": 0}`` until
  ``outage(route, False)``; ``refused`` counts the calls it answered so.
- ``GET /users/@me`` (the bot user), ``GET /oauth2/applications/@me``, ``GET /gateway/bot`` (``url``, ``shards``,
  ``session_start_limit``), ``POST /users/@me/channels`` (``recipient_id`` a known user, else 400 code 50035:
  the DM channel, type 1).
- ``POST /channels/{id}/messages``: JSON or multipart (``payload_json`` and ``files[n]``); an unknown channel 404
  code 10003; content over 2,000 characters 400 code 50035 (``BASE_TYPE_MAX_LENGTH``); nothing to send 400 code
  50006; a file over 10 MiB 413 code 40005; ``message_reference`` to a message not in the channel 400 code
  50035; a ``nonce`` (an integer or a string of at most 25 characters, else 400 code 50035) is echoed in the
  message; with ``enforce_nonce: true`` "if another message was created by the same author with the same nonce"
  within the past few minutes (``nonce_window`` seconds, ``NONCE_WINDOW_SECONDS``: Discord names no figure, the
  fake takes two minutes; ``clock`` may be replaced to step past it), "that message will be returned and no new
  message will be created": the one made first, as it shows now. Answers the message object. ``hold_next(route,
  skip)`` holds the call after ``skip`` others until the test releases it: the body taken, the message made only
  then (the client may be gone: Discord makes it all the same).
- ``GET /channels/{id}/messages`` (Get Channel Messages): ``limit`` 1-100 (default 50, else 400 code 50035),
  ``after`` (the ``limit`` messages right after that id) or ``before`` (the ``limit`` right before it) or neither
  (the newest), newest first as Discord answers; more than one of ``after``/``before``/``around`` 400 code 50035
  (``around`` itself is not modelled: 400); an unknown channel 404 code 10003. Every message of the channel, the
  bot's own among them.
- ``PATCH /channels/{id}/messages/{id}``: an unknown message 404 code 10008, another author's 403 code 50005,
  the same content bound. ``POST /channels/{id}/typing``: 204.
- ``POST /interactions/{id}/{token}/callback`` (no bot token: the interaction's token): type 4, 6 or 7, an
  interaction answered twice 400 code 40060.
- Attachments the users send are served at ``/attachments/<channel>/<id>/<name>`` (the CDN).

The gateway, ``/gateway?v=10&encoding=json[&compress=zlib-stream]``: HELLO (op 10, ``heartbeat_interval``), then
IDENTIFY (op 2: the token, else close 4004; ``intents`` an integer of known bits, else 4013; a privileged intent
the application is not granted (message content: ``message_content=False``), 4014) gives READY (``session_id``,
``resume_gateway_url``, ``user``, ``application``); a heartbeat (op 1) is acknowledged (op 11); anything else
before IDENTIFY closes 4003, an unknown opcode 4001. RESUME (op 6) replays the dispatches after its ``seq`` then
RESUMED, an unknown session gets INVALID_SESSION (op 9). Payloads are zlib-compressed binary frames ending in
``00 00 ff ff`` when ``compress=zlib-stream`` is asked. Not modelled: guilds' GUILD_CREATE (READY lists none),
members, sharding.

The test's side: ``add_user``, ``add_channel`` (a guild text channel or a thread), ``dm(user, text)`` and
``say(user, channel, text, mention=...)`` dispatch MESSAGE_CREATE and give the message (``deliver=False``: kept in
the channel's history only, as a message written while no session was connected); ``redeliver(message)``
dispatches it once more (as after a gateway RESUME); ``click(message, custom_id, user)`` dispatches
INTERACTION_CREATE for a button; ``invalidate_session()`` ends the current session (its connection closed, a RESUME
answered INVALID_SESSION: the client identifies anew, and what was dispatched meanwhile is never replayed).
Observing: ``posted(channel)`` the bot's messages as they show now (each with its
``history`` of contents), ``requests``, ``identified``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import mimetypes
import threading
import time
import zlib
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from aiohttp import WSMsgType, web

API = "/api/v10"
MAX_CONTENT = 2000
MAX_FILE_BYTES = 10 * 1024 * 1024
HEARTBEAT_MS = 41250
#: The gateway intents Discord knows (bits 0-25 less the unused ones), and the privileged ones.
KNOWN_INTENTS = sum(1 << bit for bit in (*range(0, 17), 20, 21, 24, 25))
MESSAGE_CONTENT, GUILD_MEMBERS, GUILD_PRESENCES = 1 << 15, 1 << 1, 1 << 8
_EPOCH_MS = 1420070400000
MAX_NONCE = 25
#: How long a nonce sent with ``enforce_nonce`` gives back the message it made ("the past few minutes").
NONCE_WINDOW_SECONDS = 120.0


def snowflake(counter: itertools.count) -> str:
    """A Discord id: milliseconds since Discord's epoch, shifted, and a counter."""
    return str(((int(time.time() * 1000) - _EPOCH_MS) << 22) | (next(counter) & 0xFFF))


def _json(body: Any, status: int = 200) -> web.Response:
    """A JSON answer as Discord sends it: ``Content-Type: application/json`` exactly (no charset; discord.py reads
    the body as JSON only then)."""
    return web.Response(body=json.dumps(body).encode(), status=status, headers={"Content-Type": "application/json"})


def _invalid_form(field: str, code: str, message: str) -> web.Response:
    body = {
        "code": 50035,
        "message": "Invalid Form Body",
        "errors": {field: {"_errors": [{"code": code, "message": message}]}},
    }
    return _json(body, status=400)


def _error(status: int, code: int, message: str) -> web.Response:
    return _json({"message": message, "code": code}, status=status)


class _Connection:
    """One gateway websocket, with its compression."""

    def __init__(self, ws: web.WebSocketResponse, compress: str | None) -> None:
        self.ws = ws
        self._zlib = zlib.compressobj() if compress == "zlib-stream" else None

    async def send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        if self._zlib is not None:
            await self.ws.send_bytes(self._zlib.compress(data) + self._zlib.flush(zlib.Z_SYNC_FLUSH))
        else:
            await self.ws.send_str(data.decode())


class _Session:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.seq = 0
        self.events: list[dict[str, Any]] = []
        self.connection: _Connection | None = None


class FakeDiscordAPI:
    def __init__(self, token: str = "fake-discord-bot-token.0001", message_content: bool = True) -> None:
        self.token = token
        self.message_content = message_content  # the application is granted the message content intent
        self._ids = itertools.count(1)
        self.bot = self._user("assistant", bot=True)
        self.application_id = snowflake(self._ids)
        self.users: dict[str, dict[str, Any]] = {self.bot["id"]: self.bot}
        self.channels: dict[str, dict[str, Any]] = {}
        self.dms: dict[str, str] = {}  # user id -> the DM channel's id
        self.messages: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.identified: list[dict[str, Any]] = []
        self.callbacks: list[dict[str, Any]] = []
        self.limits: dict[str, tuple[int, float]] = {}
        self.outages: set[str] = set()  # routes answered 503 until the outage ends
        self.holds: dict[str, list[list[Any]]] = {}  # route -> [[calls to let through first, release]]
        self.nonce_window = NONCE_WINDOW_SECONDS
        self.clock = time.monotonic
        self._nonces: dict[tuple[str, str], tuple[str, float]] = {}  # (author, nonce) -> (message id, made at)
        self.refused = 0
        self.files: dict[str, bytes] = {}  # attachment path -> its bytes
        self._interactions: dict[str, dict[str, Any]] = {}  # id -> {"token", "answered"}
        self.sessions: dict[str, _Session] = {}
        self.current: _Session | None = None
        self._lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- running ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{API}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    def start(self) -> FakeDiscordAPI:
        started = threading.Event()
        self.loop = asyncio.new_event_loop()

        def serve() -> None:
            assert self.loop is not None
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self._serve())
            started.set()
            self.loop.run_forever()

        self._thread = threading.Thread(target=serve, name="fake-discord", daemon=True)
        self._thread.start()
        started.wait(10)
        return self

    async def _serve(self) -> None:
        app = web.Application(client_max_size=MAX_FILE_BYTES * 2, middlewares=[self._middleware])
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get(f"{API}/users/@me", self._me)
        app.router.add_get(f"{API}/oauth2/applications/@me", self._application)
        app.router.add_get(f"{API}/gateway/bot", self._gateway_bot)
        app.router.add_post(f"{API}/users/@me/channels", self._open_dm)
        app.router.add_post(f"{API}/channels/{{channel_id}}/messages", self._create_message)
        app.router.add_get(f"{API}/channels/{{channel_id}}/messages", self._list_messages)
        app.router.add_patch(f"{API}/channels/{{channel_id}}/messages/{{message_id}}", self._edit_message)
        app.router.add_post(f"{API}/channels/{{channel_id}}/typing", self._typing)
        app.router.add_post(f"{API}/interactions/{{interaction_id}}/{{token}}/callback", self._callback)
        app.router.add_get("/attachments/{channel_id}/{attachment_id}/{name}", self._attachment)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        if self.loop is None:
            return

        async def down() -> None:
            for session in self.sessions.values():
                if session.connection is not None:
                    await session.connection.ws.close(code=1001)
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(down(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self.loop.close()
        self.loop = None

    def __enter__(self) -> FakeDiscordAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the world -------------------------------------------------------------------------

    def _user(self, name: str, bot: bool = False, user_id: str | None = None) -> dict[str, Any]:
        user = {
            "id": user_id or snowflake(self._ids),
            "username": name,
            "discriminator": "0",
            "global_name": name.title(),
            "avatar": None,
        }
        return {**user, "bot": True} if bot else user

    def add_user(self, user_id: str, name: str = "") -> str:
        """A user the bot can see; their DM channel with the bot (made once)."""
        with self._lock:
            self.users.setdefault(user_id, self._user(name or f"user{user_id[-4:]}", user_id=user_id))
            if user_id not in self.dms:
                channel_id = snowflake(self._ids)
                self.channels[channel_id] = {
                    "id": channel_id,
                    "type": 1,
                    "last_message_id": None,
                    "flags": 0,
                    "recipients": [self.users[user_id]],
                }
                self.dms[user_id] = channel_id
            return self.dms[user_id]

    def add_channel(self, guild_id: str, name: str = "general", parent_id: str | None = None) -> str:
        """A guild text channel, or a public thread (type 11) under ``parent_id``; its id."""
        channel_id = snowflake(self._ids)
        channel = {"id": channel_id, "type": 11 if parent_id else 0, "guild_id": guild_id, "name": name}
        if parent_id:
            channel["parent_id"] = parent_id
        with self._lock:
            self.channels[channel_id] = channel
        return channel_id

    def _message(self, channel_id: str, author: dict[str, Any], content: str, **extra: Any) -> dict[str, Any]:
        channel = self.channels[channel_id]
        message = {
            "id": snowflake(self._ids),
            "channel_id": channel_id,
            "author": author,
            "content": content,
            "timestamp": datetime.now(timezone.utc).isoformat(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
            "components": [],
            **extra,
        }
        if "guild_id" in channel:
            message["guild_id"] = channel["guild_id"]
        return message

    # -- the test's side: events in ------------------------------------------------------------

    def dm(
        self,
        user_id: str,
        text: str,
        files: dict[str, bytes] | None = None,
        files_at: str = "",
        *,
        deliver: bool = True,
    ) -> dict[str, Any]:
        """``user_id`` writes ``text`` (and ``files``: name -> bytes, served by the fake's CDN, or named at another
        address ``files_at``) to the bot's DM: MESSAGE_CREATE (``deliver=False``: in the history only)."""
        channel_id = self.add_user(user_id)
        return self._send_in(channel_id, user_id, text, files or {}, mention=False, files_at=files_at, deliver=deliver)

    def say(
        self, user_id: str, channel_id: str, text: str, mention: bool = False, *, deliver: bool = True
    ) -> dict[str, Any]:
        """``user_id`` writes in a guild channel or thread; ``mention``: the text starts with the bot's mention."""
        self.add_user(user_id)
        return self._send_in(channel_id, user_id, text, {}, mention, deliver=deliver)

    def _send_in(
        self,
        channel_id: str,
        user_id: str,
        text: str,
        files: dict[str, bytes],
        mention: bool,
        files_at: str = "",
        deliver: bool = True,
    ) -> dict[str, Any]:
        author = self.users[user_id]
        content = f"<@{self.bot['id']}> {text}" if mention else text
        message = self._message(channel_id, author, content, mentions=[self.bot] if mention else [])
        for name, data in files.items():
            message["attachments"].append(self._attachment_of(channel_id, name, data, files_at))
        guild = "guild_id" in message
        if guild and not mention and not self._granted(MESSAGE_CONTENT):
            message = {**message, "content": "", "attachments": [], "embeds": []}  # without the intent
        with self._lock:
            self.messages.append({**message, "history": [message["content"]]})
        if deliver:
            self.dispatch("MESSAGE_CREATE", message)
        return message

    def _attachment_of(self, channel_id: str, name: str, data: bytes, files_at: str = "") -> dict[str, Any]:
        """An attachment object, its bytes served at ``/attachments/...`` (Discord's CDN in the fake)."""
        attachment_id = snowflake(self._ids)
        path = f"/attachments/{channel_id}/{attachment_id}/{name}"
        self.files[path] = data
        url = f"{files_at or f'http://127.0.0.1:{self.port}'}{path}"
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return {
            "id": attachment_id,
            "filename": name,
            "size": len(data),
            "url": url,
            "proxy_url": url,
            "content_type": kind,
        }

    def attached(self, message: dict[str, Any]) -> list[tuple[str, bytes]]:
        """The names and bytes of a message's attachments."""
        return [(a["filename"], self.files[urlsplit(a["url"]).path]) for a in message["attachments"]]

    def redeliver(self, message: dict[str, Any]) -> None:
        """The same MESSAGE_CREATE once more (a gateway RESUME replays what the client may have had)."""
        self.dispatch("MESSAGE_CREATE", message)

    def click(self, message: dict[str, Any], custom_id: str, user_id: str) -> str:
        """``user_id`` presses the button ``custom_id`` of the bot's ``message``: INTERACTION_CREATE; its id."""
        interaction_id = snowflake(self._ids)
        token = f"interaction-token-{interaction_id}"
        self._interactions[interaction_id] = {
            "token": token,
            "answered": False,
            "message_id": message["id"],
            "channel_id": message["channel_id"],
        }
        data = {
            "id": interaction_id,
            "application_id": self.application_id,
            "type": 3,
            "data": {"custom_id": custom_id, "component_type": 2},
            "channel_id": message["channel_id"],
            "channel": {"id": message["channel_id"], "type": self.channels[message["channel_id"]]["type"]},
            "user": self.users[user_id],
            "token": token,
            "version": 1,
            "message": {k: v for k, v in message.items() if k != "history"},
            "locale": "en-US",
            "app_permissions": "0",
            "entitlements": [],
            "authorizing_integration_owners": {},
            "context": 1,  # the bot's DM
            "attachment_size_limit": MAX_FILE_BYTES,
        }
        self.dispatch("INTERACTION_CREATE", data)
        return interaction_id

    def _granted(self, intent: int) -> bool:
        session = self.current
        return bool(session and self.identified and int(self.identified[-1].get("intents", 0)) & intent)

    def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send a dispatch (op 0) on the current session; kept for a RESUME when no connection is open."""
        assert self.loop is not None
        asyncio.run_coroutine_threadsafe(self._dispatch(event, data), self.loop).result(10)

    async def _dispatch(self, event: str, data: dict[str, Any]) -> None:
        session = self.current
        if session is None:
            raise AssertionError("no gateway session: the bot has not identified")
        session.seq += 1
        payload = {"op": 0, "t": event, "s": session.seq, "d": data}
        session.events.append(payload)
        if session.connection is not None and not session.connection.ws.closed:
            await session.connection.send(payload)

    def drop_connection(self) -> None:
        """Close the current gateway connection as Discord does to ask for a RESUME (4000-class close)."""
        assert self.loop is not None and self.current is not None
        connection = self.current.connection
        if connection is not None:
            asyncio.run_coroutine_threadsafe(connection.ws.close(code=4000), self.loop).result(10)

    def invalidate_session(self) -> None:
        """Discord ends the session: its connection closes (4000, the client tries a RESUME) and the RESUME is
        answered INVALID_SESSION, so the client identifies anew; what the session had is never replayed."""
        assert self.loop is not None and self.current is not None
        session = self.current
        self.sessions.pop(session.session_id, None)
        if session.connection is not None:
            asyncio.run_coroutine_threadsafe(session.connection.ws.close(code=4000), self.loop).result(10)

    # -- observing -------------------------------------------------------------------------

    def posted(self, channel_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [m for m in self.messages if m["channel_id"] == channel_id and m["author"]["id"] == self.bot["id"]]

    def calls(self, route: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["route"] == route]

    def ratelimit(self, route: str, times: int, retry_after: float) -> None:
        self.limits[route] = (times, retry_after)

    def hold_next(self, route: str, skip: int = 0) -> threading.Event:
        """Hold the call of ``route`` after the next ``skip`` until the returned event is set (at most 60 s): its
        body read, its message made only then, as when the network is slow at that step (``calls`` says it
        arrived)."""
        release = threading.Event()
        with self._lock:
            self.holds.setdefault(route, []).append([skip, release])
        return release

    async def _held(self, route: str) -> None:
        with self._lock:
            waiting = self.holds.get(route, [])
            release = None
            for hold in waiting:
                if hold[0] == 0:
                    release = hold[1]
                    waiting.remove(hold)
                    break
                hold[0] -= 1
        if release is not None:
            await asyncio.to_thread(release.wait, 60)

    def outage(self, route: str, on: bool = True) -> None:
        """Every call of ``route`` answered 503 (Discord cannot take it now) while ``on``."""
        (self.outages.add if on else self.outages.discard)(route)

    # -- REST ------------------------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not request.path.startswith(API):
            return await handler(request)
        resource = request.match_info.route.resource
        route = f"{request.method} {resource.canonical.removeprefix(API) if resource else request.path}"
        self.requests.append({"route": route, "path": request.path})
        if "/interactions/" not in request.path and request.headers.get("Authorization") != f"Bot {self.token}":
            return _error(401, 0, "401: Unauthorized")
        if route in self.outages:
            self.refused += 1
            return _error(503, 0, "503: Service Unavailable")
        times, retry_after = self.limits.get(route, (0, 0.0))
        if times > 0:
            self.limits[route] = (times - 1, retry_after)
            body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False}
            response = _json(body, status=429)
            response.headers.update(self._limit_headers(0, retry_after))
            response.headers.update({"Retry-After": str(max(1, round(retry_after))), "Via": "1.1 google"})
            response.headers["X-RateLimit-Scope"] = "user"
            return response
        response = await handler(request)
        response.headers.update(self._limit_headers(4, 1.0))
        return response

    @staticmethod
    def _limit_headers(remaining: int, reset_after: float) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": "abcd1234",
        }

    async def _me(self, request: web.Request) -> web.Response:
        return _json({**self.bot, "verified": True, "mfa_enabled": False, "flags": 0})

    async def _application(self, request: web.Request) -> web.Response:
        return _json(
            {
                "id": self.application_id,
                "name": "assistant",
                "icon": None,
                "description": "",
                "bot_public": False,
                "bot_require_code_grant": False,
                "verify_key": "0" * 64,
                "owner": self._user("developer"),
                "team": None,
                "flags": (1 << 19) if self.message_content else 0,  # GATEWAY_MESSAGE_CONTENT_LIMITED
                "bot": self.bot,
            }
        )

    async def _gateway_bot(self, request: web.Request) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1}
        return _json({"url": self.gateway_url, "shards": 1, "session_start_limit": limit})

    async def _open_dm(self, request: web.Request) -> web.Response:
        body = await request.json()
        recipient = str(body.get("recipient_id", ""))
        if recipient not in self.users or recipient == self.bot["id"]:
            return _invalid_form("recipient_id", "NUMBER_TYPE_COERCE", f'Value "{recipient}" is not snowflake.')
        return _json(self.channels[self.add_user(recipient)])

    async def _read_message_body(
        self, request: web.Request
    ) -> tuple[dict[str, Any], list[tuple[str, bytes]]] | web.Response:
        if not request.content_type.startswith("multipart/"):
            return await request.json(), []
        payload: dict[str, Any] = {}
        files: list[tuple[str, bytes]] = []
        reader = await request.multipart()
        async for part in reader:
            if part.name == "payload_json":
                payload = json.loads(await part.text())  # type: ignore[union-attr]
            elif part.name and part.name.startswith("files["):
                data = await part.read()  # type: ignore[union-attr]
                if len(data) > MAX_FILE_BYTES:
                    return _error(413, 40005, "Request entity too large")
                files.append((part.filename or "file", bytes(data)))
        return payload, files

    async def _create_message(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        if channel_id not in self.channels:
            return _error(404, 10003, "Unknown Channel")
        read = await self._read_message_body(request)
        if isinstance(read, web.Response):
            return read
        body, files = read
        nonce = body.get("nonce")
        if nonce is not None and (not isinstance(nonce, (str, int)) or len(str(nonce)) > MAX_NONCE):
            return _invalid_form("nonce", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_NONCE} or fewer in length.")
        await self._held("POST /channels/{channel_id}/messages")
        made = self._made_before(nonce) if body.get("enforce_nonce") is True else None
        if made is not None:
            return _json({k: v for k, v in made.items() if k != "history"})
        content = body.get("content") or ""
        if len(content) > MAX_CONTENT:
            return _invalid_form("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
        if not content and not files and not body.get("embeds") and not body.get("components"):
            return _error(400, 50006, "Cannot send an empty message")
        reference = body.get("message_reference")
        if reference and not any(
            m["id"] == str(reference.get("message_id")) and m["channel_id"] == channel_id for m in self.messages
        ):
            return _invalid_form("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
        message = self._message(channel_id, self.bot, content, components=body.get("components") or [])
        if nonce is not None:
            message["nonce"] = nonce
        for name, data in files:
            message["attachments"].append(self._attachment_of(channel_id, name, data))
        if reference:
            message["message_reference"] = {"message_id": str(reference["message_id"]), "channel_id": channel_id}
        with self._lock:
            self.messages.append({**message, "history": [content]})
            if nonce is not None and body.get("enforce_nonce") is True:
                self._nonces[(self.bot["id"], str(nonce))] = (message["id"], self.clock())
        return _json(message)

    def _made_before(self, nonce: object) -> dict[str, Any] | None:
        """The bot's message made with ``nonce`` within ``nonce_window`` seconds, as it shows now."""
        with self._lock:
            made = self._nonces.get((self.bot["id"], str(nonce)))
            if made is None or self.clock() - made[1] > self.nonce_window:
                return None
            return next((m for m in self.messages if m["id"] == made[0]), None)

    async def _list_messages(self, request: web.Request) -> web.Response:
        channel_id, query = request.match_info["channel_id"], request.query
        if channel_id not in self.channels:
            return _error(404, 10003, "Unknown Channel")
        limit = query.get("limit", "50")
        if not limit.isdigit() or not 1 <= int(limit) <= 100:
            return _invalid_form("limit", "NUMBER_TYPE_MAX", "int value should be less than or equal to 100.")
        if sum(key in query for key in ("after", "before", "around")) > 1 or "around" in query:
            return _invalid_form("around", "BASE_TYPE_BAD", "only one of after, before (around: not modelled)")
        with self._lock:
            found = sorted((m for m in self.messages if m["channel_id"] == channel_id), key=lambda m: int(m["id"]))
        if "after" in query:
            page = [m for m in found if int(m["id"]) > int(query["after"])][: int(limit)]
        else:
            if "before" in query:
                found = [m for m in found if int(m["id"]) < int(query["before"])]
            page = found[-int(limit) :]
        return _json([{k: v for k, v in m.items() if k != "history"} for m in reversed(page)])

    async def _edit_message(self, request: web.Request) -> web.Response:
        channel_id, message_id = request.match_info["channel_id"], request.match_info["message_id"]
        with self._lock:
            found = [m for m in self.messages if m["id"] == message_id and m["channel_id"] == channel_id]
        if not found:
            return _error(404, 10008, "Unknown Message")
        [message] = found
        if message["author"]["id"] != self.bot["id"]:
            return _error(403, 50005, "Cannot edit a message authored by another user")
        body = await request.json()
        if "content" in body:
            content = body["content"] or ""
            if len(content) > MAX_CONTENT:
                return _invalid_form("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
            with self._lock:
                message["content"] = content
                message["history"].append(content)
                message["edited_timestamp"] = datetime.now(timezone.utc).isoformat()
        if "components" in body:
            message["components"] = body["components"] or []
        return _json({k: v for k, v in message.items() if k != "history"})

    async def _typing(self, request: web.Request) -> web.Response:
        if request.match_info["channel_id"] not in self.channels:
            return _error(404, 10003, "Unknown Channel")
        return web.Response(status=204)

    async def _callback(self, request: web.Request) -> web.Response:
        interaction_id = request.match_info["interaction_id"]
        interaction = self._interactions.get(interaction_id)
        if interaction is None or interaction["token"] != request.match_info["token"]:
            return _error(404, 10062, "Unknown interaction")
        if interaction["answered"]:
            return _error(400, 40060, "Interaction has already been acknowledged.")
        body = await request.json()
        kind, data = body.get("type"), body.get("data") or {}
        if kind not in (4, 5, 6, 7):
            return _invalid_form("type", "BASE_TYPE_CHOICES", "Value must be one of {4, 5, 6, 7}.")
        if len(data.get("content") or "") > MAX_CONTENT:
            return _invalid_form("data.content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
        interaction["answered"] = True
        self.callbacks.append({"interaction_id": interaction_id, **body})
        message = self._answer_interaction(interaction["message_id"], interaction["channel_id"], kind, data)
        if request.query.get("with_response") not in ("1", "true"):
            return web.Response(status=204)
        ephemeral = bool(int(data.get("flags") or 0) & 64)
        answer = {
            "interaction": {
                "id": interaction_id,
                "type": 3,
                "response_message_id": message["id"],
                "response_message_loading": kind == 5,
                "response_message_ephemeral": ephemeral,
            },
            "resource": {"type": kind, "message": {k: v for k, v in message.items() if k != "history"}},
        }
        return _json(answer)

    def _answer_interaction(self, message_id: str, channel_id: str, kind: int, data: dict[str, Any]) -> dict[str, Any]:
        """Type 7 (UPDATE_MESSAGE) edits the button's message; 4 (a message) makes one, shown only to the presser
        when ephemeral (flags 64: kept in ``callbacks``, not among the channel's messages)."""
        if kind in (6, 7):
            with self._lock:
                [message] = [m for m in self.messages if m["id"] == message_id]
                if kind == 7 and "content" in data:
                    message["content"] = data["content"] or ""
                    message["history"].append(message["content"])
                if kind == 7 and "components" in data:
                    message["components"] = data["components"] or []
            return message
        made = self._message(channel_id, self.bot, data.get("content") or "", flags=int(data.get("flags") or 0))
        if not made["flags"] & 64:
            with self._lock:
                self.messages.append({**made, "history": [made["content"]]})
        return made

    async def _attachment(self, request: web.Request) -> web.Response:
        data = self.files.get(request.path)
        if data is None:
            return web.Response(status=404, text="Not Found")
        return web.Response(body=data, content_type="application/octet-stream")

    # -- the gateway -----------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        query = request.query
        if query.get("v") != "10":
            await ws.close(code=4012, message=b"Invalid API version")
            return ws
        if query.get("encoding", "json") != "json":
            await ws.close(code=4002, message=b"Decode error")
            return ws
        connection = _Connection(ws, query.get("compress"))
        await connection.send({"op": 10, "d": {"heartbeat_interval": HEARTBEAT_MS}, "s": None, "t": None})
        session: _Session | None = None
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                break
            try:
                payload = json.loads(frame.data)
                op = payload["op"]
            except (ValueError, KeyError, TypeError):
                await ws.close(code=4002, message=b"Decode error")
                break
            if op == 1:
                await connection.send({"op": 11, "d": None, "s": None, "t": None})
            elif op == 2:
                session = await self._identify(connection, payload.get("d") or {})
            elif op == 6:
                session = await self._resume(connection, payload.get("d") or {})
            elif session is None:
                await ws.close(code=4003, message=b"Not authenticated")
            elif op in (3, 4, 8):
                continue  # presence, voice state, guild members: nothing the fake models
            else:
                await ws.close(code=4001, message=b"Unknown opcode")
        if session is not None and session.connection is connection:
            session.connection = None
        return ws

    async def _identify(self, connection: _Connection, data: dict[str, Any]) -> _Session | None:
        ws = connection.ws
        if data.get("token") != self.token:
            await ws.close(code=4004, message=b"Authentication failed")
            return None
        intents = data.get("intents")
        if not isinstance(intents, int) or isinstance(intents, bool) or intents & ~KNOWN_INTENTS:
            await ws.close(code=4013, message=b"Invalid intent(s)")
            return None
        privileged = intents & (GUILD_MEMBERS | GUILD_PRESENCES)
        if privileged or (intents & MESSAGE_CONTENT and not self.message_content):
            await ws.close(code=4014, message=b"Disallowed intent(s)")
            return None
        self.identified.append(data)
        session = _Session(f"session{next(self._ids)}")
        session.connection = connection
        self.sessions[session.session_id] = session
        self.current = session
        await self._dispatch(
            "READY",
            {
                "v": 10,
                "user": {**self.bot, "verified": True, "mfa_enabled": False, "flags": 0},
                "guilds": [],
                "session_id": session.session_id,
                "resume_gateway_url": self.gateway_url,
                "shard": [0, 1],
                "application": {"id": self.application_id, "flags": 0},
            },
        )
        return session

    async def _resume(self, connection: _Connection, data: dict[str, Any]) -> _Session | None:
        session = self.sessions.get(str(data.get("session_id")))
        if data.get("token") != self.token or session is None:
            await connection.send({"op": 9, "d": False, "s": None, "t": None})
            return None
        session.connection = connection
        self.current = session
        after = int(data.get("seq") or 0)
        for payload in session.events:
            if payload["s"] > after:
                await connection.send(payload)
        session.seq += 1
        await connection.send({"op": 0, "t": "RESUMED", "s": session.seq, "d": {}})
        return session
