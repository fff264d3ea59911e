"""The Web API calls the channel makes, through slack-sdk's ``WebClient`` (its ``base_url`` points at a proxy or
a test server), each in a worker thread.

Slack answers an error as ``{"ok": false, "error": "<code>"}``: ``SlackUnavailable`` when trying again later can
help (no connection, HTTP 5xx, ``ratelimited`` with its ``Retry-After``, a token the owner can fix), else
``DeliveryError`` for good (``channel_not_found``, ``msg_too_long``...). The token is never in an error's text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import NotRequired, TypedDict
from urllib.parse import urlsplit

import httpx

from assistant_framework.json_types import JsonObject
from assistant_framework.tls import shared_context
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.slack.buttons import Block
from messaging_llm_bot.conversation.media_in import read_within

TIMEOUT_SECONDS = 30
#: Where a file's ``url_private`` may point: the bot token goes nowhere else (the Web API's own host is allowed
#: too, for a proxy or a test server in Slack's place).
FILES_HOST = "files.slack.com"
#: Error codes that mean "later": the token (fixed by the owner, then the reply goes out) and Slack's own trouble.
RETRY_CODES = frozenset(
    {
        "ratelimited",
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "account_inactive",
        "fatal_error",
        "service_unavailable",
        "internal_error",
        "request_timeout",
    }
)
#: Error codes that say Slack refuses the token itself (a later call with it will not help): at start-up, the end.
TOKEN_REFUSED = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked"})


class SlackUnavailable(Exception):
    """The Web API cannot take the call now; ``retry_after`` seconds (Slack's ``Retry-After``) or 0; ``code``
    Slack's error code ("" when nothing answered)."""

    def __init__(self, message: str, retry_after: float = 0.0, code: str = "") -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.code = code

    @property
    def token_refused(self) -> bool:
        """Slack answered, and refused the token (not an outage)."""
        return self.code in TOKEN_REFUSED


class PostArgs(TypedDict):
    """``chat.postMessage``'s arguments as the channel sends them."""

    channel: str
    text: str
    unfurl_links: bool
    thread_ts: NotRequired[str]
    blocks: NotRequired[list[Block]]


class UpdateArgs(TypedDict):
    """``chat.update``'s arguments as the channel sends them."""

    channel: str
    ts: str
    text: str
    blocks: NotRequired[list[Block]]


class SlackClient:
    """The bot token's client; every call raises ``SlackUnavailable`` or ``DeliveryError`` on failure."""

    def __init__(self, base_url: str, token: str, timeout: int = TIMEOUT_SECONDS) -> None:
        from slack_sdk import WebClient  # the slack extra: imported only when the channel runs

        self._token = token
        self._timeout = timeout
        self._hosts = {FILES_HOST, urlsplit(base_url).netloc or FILES_HOST}  # host[:port]
        # No retry handlers: a rate limit is the caller's to wait out (the reply stays in the inbox meanwhile).
        self._web = WebClient(token=token, base_url=base_url, timeout=timeout, retry_handlers=[])

    async def _call(self, method: str, **args: object) -> JsonObject:
        """Slack's answer to ``method`` (its raw JSON: each caller reads what it needs)."""
        from slack_sdk.errors import SlackApiError, SlackClientError

        try:
            response = await asyncio.to_thread(self._web.api_call, method, json=args)
        except SlackApiError as err:
            raise failure(method, err.response.status_code, err.response.get("error"), err.response.headers) from None
        except (OSError, SlackClientError) as err:
            raise SlackUnavailable(f"the Slack Web API cannot be reached: {type(err).__name__}") from None
        data = response.data
        if not isinstance(data, dict):
            raise SlackUnavailable(f"{method}: the answer is not JSON")
        return data

    async def auth_test(self) -> JsonObject:
        return await self._call("auth.test")

    async def post(
        self, channel: str, text: str, thread_ts: str | None = None, blocks: list[Block] | None = None
    ) -> str:
        """Post ``text`` (Slack's mrkdwn; with ``blocks``, their fallback) to ``channel`` (in the thread
        ``thread_ts``); the new message's ts."""
        args: PostArgs = {"channel": channel, "text": text, "unfurl_links": False}
        if thread_ts:
            args["thread_ts"] = thread_ts
        if blocks is not None:
            args["blocks"] = blocks
        return ts_of(await self._call("chat.postMessage", **args))

    async def update(self, channel: str, ts: str, text: str, blocks: list[Block] | None = None) -> None:
        args: UpdateArgs = {"channel": channel, "ts": ts, "text": text}
        if blocks is not None:
            args["blocks"] = blocks
        await self._call("chat.update", **args)

    async def download(self, url: str, limit_bytes: int) -> bytes:
        """A shared file's bytes from its ``url_private``, with the bot token; ``DeliveryError`` when it is larger
        than ``limit_bytes`` (counted while read) or not on Slack's file host."""
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http") or parts.netloc not in self._hosts:
            raise DeliveryError(f"a file URL not on {FILES_HOST}: not fetched", for_good=True)
        headers = {"Authorization": f"Bearer {self._token}"}
        try:
            async with (
                httpx.AsyncClient(timeout=self._timeout, follow_redirects=False, verify=shared_context()) as http,
                http.stream("GET", url, headers=headers) as response,
            ):
                if response.status_code != 200:
                    raise failure("the file download", response.status_code, None, response.headers)
                got = await read_within(response.aiter_bytes(), limit_bytes)
        except httpx.HTTPError as err:
            raise SlackUnavailable(f"the file cannot be fetched: {type(err).__name__}") from None
        if got is None:
            raise DeliveryError(f"the file is larger than {limit_bytes // 1_000_000} MB", for_good=True)
        return got

    async def upload(self, channel: str, thread_ts: str | None, name: str, data: bytes, comment: str) -> str:
        """Share ``data`` as the file ``name`` in ``channel`` (its thread), Slack's three steps
        (files.getUploadURLExternal, the upload, files.completeUploadExternal); the file's id."""
        from slack_sdk.errors import SlackApiError, SlackClientError

        try:
            response = await asyncio.to_thread(
                lambda: self._web.files_upload_v2(
                    channel=channel,
                    file=data,
                    filename=name,
                    title=name,
                    thread_ts=thread_ts or None,  # None: not sent, as when the argument is left out
                    initial_comment=comment or None,
                )
            )
        except SlackApiError as err:
            raise failure(
                "files upload", err.response.status_code, err.response.get("error"), err.response.headers
            ) from None
        except (OSError, SlackClientError) as err:
            raise SlackUnavailable(f"the file could not be uploaded: {type(err).__name__}") from None
        files = response.get("files")
        if not isinstance(files, list) or not files or not isinstance(files[0], dict):
            raise SlackUnavailable("files.completeUploadExternal: the answer has no file")
        return str(files[0].get("id") or "")

    async def open_dm(self, user: str) -> str:
        """The DM channel with ``user``."""
        got = await self._call("conversations.open", users=user)
        channel = got.get("channel")
        if not isinstance(channel, dict) or not isinstance(channel.get("id"), str):
            raise SlackUnavailable("conversations.open: the answer has no channel id")
        return str(channel["id"])


def ts_of(answer: JsonObject) -> str:
    ts = answer.get("ts")
    if not isinstance(ts, str) or not ts:
        raise SlackUnavailable("chat.postMessage: the answer has no ts")
    return ts


def failure(method: str, status: int, code: object, headers: Mapping[str, str | list[str]] | None) -> Exception:
    """The exception for an error answer: later (``SlackUnavailable``) or for good (``DeliveryError``)."""
    error = str(code or f"HTTP {status}")
    text = f"{method}: {error}"
    if status == 429 or status >= 500 or error in RETRY_CODES:
        retry = (headers or {}).get("Retry-After") or (headers or {}).get("retry-after")
        try:
            wait = float(retry[0] if isinstance(retry, list) else retry) if retry else 0.0
        except ValueError:
            wait = 0.0
        return SlackUnavailable(text, min(max(wait, 0.0), 300.0), code=error)
    return DeliveryError(text, for_good=True)
