"""The homeserver through matrix-nio: login on one kept device, sync, send, edit, typing, join and leave, a
direct room opened with someone, and media up and down with a bound.

nio answers a failed call with an error object; here it becomes ``MatrixUnavailable`` (the server is
unreachable, overloaded or rate limiting: try again later) or ``DeliveryError(for_good=True)`` (forbidden, no
such room: sending again cannot help). nio's own retry loops are limited (``AsyncClientConfig``) so a call
never waits forever; the channel retries with backoff itself.
"""

from __future__ import annotations

import logging
from typing import Any, TypedDict
from urllib.parse import quote

import aiohttp
import nio

from assistant_framework.config.settings import MatrixSettings
from assistant_framework.json_types import JsonObject
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.matrix.format import MessageContent
from messaging_llm_bot.channels.matrix.settings import MatrixLogin
from messaging_llm_bot.conversation.media_in import Download, larger_than, read_within

log = logging.getLogger(__name__)

SYNC_TIMEOUT_MS = 10_000
REQUEST_TIMEOUT_SECONDS = 30.0


class NotTypes(TypedDict):
    not_types: list[str]


class TimelineFilter(TypedDict):
    limit: int


class RoomFilter(TypedDict):
    timeline: TimelineFilter
    account_data: NotTypes


class SyncFilter(TypedDict):
    """The sync filter the bot sends (the spec's ``Filter``, the parts it sets)."""

    presence: NotTypes
    account_data: NotTypes
    room: RoomFilter


def sync_filter(timeline_limit: int) -> SyncFilter:
    """The timeline of each room (at most ``timeline_limit`` events), no presence, no account data the bot
    never reads."""
    return {
        "presence": {"not_types": ["*"]},
        "account_data": {"not_types": ["*"]},
        "room": {"timeline": {"limit": timeline_limit}, "account_data": {"not_types": ["*"]}},
    }


SYNC_FILTER = sync_filter(50)
#: The first sync of a workspace: state and invites only; what was said before the bot ran is not answered.
FIRST_SYNC_FILTER = sync_filter(0)
# Error codes after which a retry cannot succeed.
_FOR_GOOD = {"M_FORBIDDEN", "M_NOT_FOUND", "M_UNKNOWN_TOKEN", "M_BAD_JSON", "M_NOT_JSON", "M_TOO_LARGE"}


class CallBody(TypedDict, total=False):
    """The body of a call ``raw`` makes: a leave's reason, or nothing (``{}``)."""

    reason: str


#: The bot's ``m.direct`` account data: each person's direct rooms, as Matrix clients mark them.
DirectRooms = dict[str, list[str]]


class MatrixUnavailable(Exception):
    """The homeserver could not be reached or could not answer now (network, 5xx, rate limit)."""


class LoginFailed(Exception):
    """The homeserver refused the bot's credentials: one sentence for the owner."""


def _failed(answer: nio.ErrorResponse, what: str) -> Exception:
    code = answer.status_code or ""
    status = getattr(answer.transport_response, "status", 0) or 0
    text = f"{what}: {answer}"
    if code in _FOR_GOOD or (400 <= status < 500 and status != 429 and code != "M_LIMIT_EXCEEDED"):
        return DeliveryError(text, for_good=True)
    return MatrixUnavailable(text)


class MatrixClient:
    """One logged-in device of the bot's account."""

    def __init__(self, config: MatrixSettings, device_id: str | None) -> None:
        self.config = config
        self.homeserver = config.homeserver_url
        self.credential = MatrixLogin.of(config)
        nio_config = nio.AsyncClientConfig(
            max_limit_exceeded=2,  # nio waits out a 429 twice, then the channel's own backoff takes over
            max_timeouts=0,
            request_timeout=REQUEST_TIMEOUT_SECONDS,
            store_sync_tokens=False,  # the channel keeps next_batch itself, after the inbox has the events
            encryption_enabled=False,
        )
        self.nio = nio.AsyncClient(self.homeserver, config.user_id, device_id=device_id or "", config=nio_config)

    @property
    def user_id(self) -> str:
        return str(self.nio.user_id)

    @property
    def device_id(self) -> str:
        return str(self.nio.device_id or "")

    async def login(self) -> None:
        """Log in with the access token (its device) or the password (on the kept device); LoginFailed when
        refused, MatrixUnavailable when the server cannot be reached."""
        try:
            if self.credential.access_token:
                self.nio.access_token = self.credential.access_token
                who = await self.nio.whoami()
                if isinstance(who, nio.WhoamiError):
                    raise LoginFailed(f"the homeserver refused matrix.access_token: {who}")
                self.nio.user_id = who.user_id
                self.nio.device_id = who.device_id or ""
                return
            answer = await self.nio.login(self.credential.password, device_name=self.config.device_name)
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            raise MatrixUnavailable(f"cannot reach {self.homeserver}: {err}") from err
        if isinstance(answer, nio.LoginError):
            if answer.status_code in ("M_FORBIDDEN", "M_USER_DEACTIVATED", "M_INVALID_PARAM"):
                raise LoginFailed(f"the homeserver refused the login of {self.config.user_id}: {answer.message}")
            raise MatrixUnavailable(f"login: {answer}")

    async def _call(self, what: str, call: Any) -> Any:
        try:
            answer = await call
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            raise MatrixUnavailable(f"{what}: {type(err).__name__}: {err}") from err
        if isinstance(answer, nio.ErrorResponse):
            raise _failed(answer, what)
        return answer

    async def sync(self, since: str | None, *, first: bool, full_state: bool) -> nio.SyncResponse:
        answer: nio.SyncResponse = await self._call(
            "sync",
            self.nio.sync(
                timeout=0 if full_state else SYNC_TIMEOUT_MS,
                sync_filter=dict(FIRST_SYNC_FILTER if first else SYNC_FILTER),
                since=since,
                full_state=full_state,
            ),
        )
        return answer

    async def send(self, room_id: str, content: MessageContent, txn_id: str) -> str:
        """Send ``content``; the homeserver takes one message per ``txn_id`` of this device (a resend after a
        crash is the same event). The event id."""
        sent = self.nio.room_send(room_id, "m.room.message", dict(content), tx_id=txn_id)
        answer = await self._call("send", sent)
        return str(answer.event_id)

    async def typing(self, room_id: str, on: bool = True) -> None:
        await self._call("typing", self.nio.room_typing(room_id, on, timeout=30_000))

    async def join(self, room_id: str) -> None:
        await self._call("join", self.nio.join(room_id))

    async def leave(self, room_id: str, reason: str = "") -> None:
        """Leave (or refuse an invite to) ``room_id``, with ``reason`` shown to the room."""
        path = f"/_matrix/client/v3/rooms/{quote(room_id)}/leave"
        await self.raw("POST", path, {"reason": reason} if reason else {})

    async def open_direct(self, user_id: str) -> str:
        """A new direct room with ``user_id`` invited (``is_direct``, unencrypted), marked in the bot's
        ``m.direct`` as clients expect: its id. The mark is best effort (logged): the room is there either way."""
        created = self.nio.room_create(is_direct=True, invite=[user_id], preset=nio.RoomPreset.trusted_private_chat)
        room_id = str((await self._call("create a direct room", created)).room_id)
        path = f"/_matrix/client/v3/user/{quote(self.user_id)}/account_data/m.direct"
        try:
            try:
                marked = await self.raw("GET", path, None)
            except DeliveryError:  # M_NOT_FOUND: nothing marked yet
                marked = {}
            direct: DirectRooms = {
                k: [r for r in v if isinstance(r, str)] for k, v in marked.items() if isinstance(v, list)
            }
            direct[user_id] = [*direct.get(user_id, []), room_id]
            await self.raw("PUT", path, direct)
        except (MatrixUnavailable, DeliveryError) as err:
            log.warning("matrix: %s is not marked as a direct room in m.direct: %s", room_id, err)
        return room_id

    async def joined_encrypted(self, room_id: str) -> bool:
        """Whether ``room_id`` has end-to-end encryption turned on (its ``m.room.encryption`` state)."""
        path = f"/_matrix/client/v3/rooms/{quote(room_id)}/state/m.room.encryption/"
        try:
            await self.raw("GET", path, None)
        except DeliveryError:
            return False  # M_NOT_FOUND: no such state event
        return True

    async def raw(
        self, method: str, path: str, body: CallBody | DirectRooms | None, *, auth: bool = True
    ) -> JsonObject:
        """One client-server call nio has no method for; its JSON answer (read by the caller)."""
        session = await self._session()
        try:
            async with session.request(
                method,
                self.homeserver + path,
                json=body,
                headers={"Authorization": f"Bearer {self.nio.access_token}"} if auth else {},
                timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_SECONDS),
            ) as answer:
                data = await answer.json(content_type=None)
                if answer.status >= 400:
                    code = data.get("errcode", "") if isinstance(data, dict) else ""
                    text = f"{method} {path}: {answer.status} {code}"
                    if answer.status == 429 or answer.status >= 500:
                        raise MatrixUnavailable(text)
                    raise DeliveryError(text, for_good=True)
                return data if isinstance(data, dict) else {}
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as err:
            raise MatrixUnavailable(f"{method} {path}: {type(err).__name__}: {err}") from err

    async def _session(self) -> aiohttp.ClientSession:
        if self.nio.client_session is None:
            self.nio.client_session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_SECONDS)
            )
        session: aiohttp.ClientSession = self.nio.client_session
        return session

    async def upload(self, data: bytes, mime: str, name: str) -> str:
        """Put ``data`` into the media repository; its ``mxc://`` address."""
        session = await self._session()
        try:
            async with session.post(
                f"{self.homeserver}/_matrix/media/v3/upload",
                params={"filename": name},
                data=data,
                headers={"Authorization": f"Bearer {self.nio.access_token}", "Content-Type": mime},
                timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_SECONDS * 4),
            ) as answer:
                body = await answer.json(content_type=None)
                if answer.status >= 400 or not isinstance(body, dict) or "content_uri" not in body:
                    text = f"upload: {answer.status} {str(body)[:200]}"
                    if answer.status == 429 or answer.status >= 500:
                        raise MatrixUnavailable(text)
                    raise DeliveryError(text, for_good=True)
                return str(body["content_uri"])
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as err:
            raise MatrixUnavailable(f"upload: {type(err).__name__}: {err}") from err

    async def download(self, mxc: str, limit_bytes: int) -> Download | str:
        """The file behind ``mxc`` (authenticated media, spec v1.11), read up to ``limit_bytes``; a sentence
        for the user instead when it is larger, gone or cannot be fetched."""
        server, _, media_id = mxc.removeprefix("mxc://").partition("/")
        if not mxc.startswith("mxc://") or not server or not media_id or "/" in media_id:
            return "The file's address is not a Matrix media address."
        session = await self._session()
        url = f"{self.homeserver}/_matrix/client/v1/media/download/{quote(server)}/{quote(media_id)}"
        try:
            async with session.get(
                url,
                headers={"Authorization": f"Bearer {self.nio.access_token}"},
                timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_SECONDS * 4),
            ) as answer:
                if answer.status >= 400:
                    return f"The homeserver did not give the file (HTTP {answer.status})."
                data = await read_within(answer.content.iter_chunked(64 * 1024), limit_bytes)
                if data is None:
                    return larger_than(limit_bytes)
                return Download(data, answer.headers.get("Content-Type", "application/octet-stream"))
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            return f"Getting the file from the homeserver failed: {type(err).__name__}."

    async def close(self) -> None:
        await self.nio.close()
