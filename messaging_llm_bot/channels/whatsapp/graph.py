"""The Cloud API calls the channel makes: messages out, read receipts with typing, media up and down.

One ``httpx.AsyncClient`` with the bearer token. The answers are Meta's documented shapes; an error answer
(``{"error": {"message", "code", ...}}``) becomes ``GraphUnavailable`` when sending again later can help (no
connection, 5xx, rate limits, an expired or wrong token the owner can fix) and ``DeliveryError`` when it
cannot (a malformed message, a number that is not on WhatsApp, an unknown template). The token is never in
an error's text.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

import httpx

from assistant_framework.tls import shared_context
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.conversation.media_in import Download, larger_than, read_within, too_large

TIMEOUT_SECONDS = 30.0
#: Meta's codes that mean "later": throttling (4, 80007, 130429, 131048, 131056), a temporary error (1, 2,
#: 131000, 131016) and the token (190: fixed by the owner, then the held reply goes out).
RETRY_CODES = frozenset({1, 2, 4, 190, 80007, 130429, 131000, 131016, 131048, 131056})


class TextBody(TypedDict):
    body: str


class ReplyContext(TypedDict):
    message_id: str


class TextMessage(TypedDict):
    """A free-form text message (inside the 24-hour window), maybe a reply to the user's message."""

    to: str
    type: Literal["text"]
    text: TextBody
    context: NotRequired[ReplyContext]


class TemplateParameter(TypedDict):
    type: Literal["text"]
    text: str


class TemplateComponent(TypedDict):
    type: Literal["body"]
    parameters: list[TemplateParameter]


class TemplateLanguage(TypedDict):
    code: str


class Template(TypedDict):
    name: str
    language: TemplateLanguage
    components: list[TemplateComponent]


class TemplateMessage(TypedDict):
    """The approved template (outside the window), the reply's text as its body's parameter."""

    to: str
    type: Literal["template"]
    template: Template


class MediaObject(TypedDict):
    """An uploaded file by its media id (``upload``)."""

    id: str
    caption: NotRequired[str]
    filename: NotRequired[str]


class ImageMessage(TypedDict):
    to: str
    type: Literal["image"]
    image: MediaObject


class AudioMessage(TypedDict):
    to: str
    type: Literal["audio"]
    audio: MediaObject


class DocumentMessage(TypedDict):
    to: str
    type: Literal["document"]
    document: MediaObject


#: One message ``send`` posts (without ``messaging_product`` and ``recipient_type``, which it adds).
OutgoingMessage = TextMessage | TemplateMessage | ImageMessage | AudioMessage | DocumentMessage


class TypingIndicator(TypedDict):
    type: Literal["text"]


class ReadReceipt(TypedDict):
    """``mark_read``'s body: the message read, and "typing..." with it."""

    messaging_product: Literal["whatsapp"]
    status: Literal["read"]
    message_id: str
    typing_indicator: NotRequired[TypingIndicator]


class GraphUnavailable(Exception):
    """The Graph API cannot take the call now; the caller keeps the message and tries again later."""


def error_of(response: httpx.Response) -> tuple[int, str]:
    """Meta's error code and its message (with the details) of an error answer."""
    try:
        error = response.json().get("error") or {}
    except ValueError:
        return 0, response.text[:200]
    details = (error.get("error_data") or {}).get("details") or ""
    message = str(error.get("message") or "")
    return int(error.get("code") or 0), f"{message} {details}".strip()[:300]


class GraphClient:
    """The channel's client of one phone number id; ``close()`` at the end."""

    def __init__(self, base_url: str, phone_number_id: str, token: str, timeout: float = TIMEOUT_SECONDS) -> None:
        self.base_url = base_url.rstrip("/")
        self.phone_number_id = phone_number_id
        self._http = httpx.AsyncClient(
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            follow_redirects=False,
            verify=shared_context(),  # the process's one context: httpx would parse certifi's bundle per client
        )

    async def close(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await self._http.request(method, url, **kwargs)
        except httpx.HTTPError as err:
            raise GraphUnavailable(f"the Graph API cannot be reached: {type(err).__name__}") from None
        if response.status_code < 400:
            return response
        code, message = error_of(response)
        text = f"HTTP {response.status_code}, #{code}: {message}"
        if response.status_code >= 500 or response.status_code == 429 or code in RETRY_CODES:
            raise GraphUnavailable(text)
        raise DeliveryError(text, for_good=True)

    async def send(self, payload: OutgoingMessage) -> str:
        """POST one message (``to``, ``type`` and its object); the new message's ``wamid``."""
        body: dict[str, object] = {"messaging_product": "whatsapp", "recipient_type": "individual", **payload}
        response = await self._call("POST", f"{self.base_url}/{self.phone_number_id}/messages", json=body)
        try:
            return str(response.json()["messages"][0]["id"])
        except (ValueError, KeyError, IndexError, TypeError):
            raise GraphUnavailable("the Graph API's answer has no message id") from None

    async def mark_read(self, message_id: str, typing: bool) -> None:
        """Two blue ticks on ``message_id``, and "typing..." (until the answer, at most 25 s) when ``typing``."""
        body: ReadReceipt = {"messaging_product": "whatsapp", "status": "read", "message_id": message_id}
        if typing:
            body["typing_indicator"] = {"type": "text"}
        await self._call("POST", f"{self.base_url}/{self.phone_number_id}/messages", json=body)

    async def upload(self, data: bytes, mime: str, name: str) -> str:
        """Upload a file for sending; its media id."""
        response = await self._call(
            "POST",
            f"{self.base_url}/{self.phone_number_id}/media",
            data={"messaging_product": "whatsapp", "type": mime},
            files={"file": (name, data, mime)},
        )
        try:
            return str(response.json()["id"])
        except (ValueError, KeyError, TypeError):
            raise GraphUnavailable("the Graph API's upload answer has no id") from None

    async def download(self, media_id: str, limit_bytes: int) -> Download | str:
        """A received file's bytes by its media id (its short-lived URL, fetched with the token), or a sentence
        for the sender when it is larger than ``limit_bytes`` (checked by the size Meta gives, and while read)."""
        if not media_id.isdigit():
            raise DeliveryError("a media id is digits", for_good=True)
        info = (await self._call("GET", f"{self.base_url}/{media_id}")).json()
        url, mime, size = str(info.get("url") or ""), str(info.get("mime_type") or ""), int(info.get("file_size") or 0)
        if size > limit_bytes:
            return too_large(size, limit_bytes)
        if not url.startswith(("https://", "http://")):
            raise GraphUnavailable("the Graph API gave no download URL")
        try:
            async with self._http.stream("GET", url) as response:
                if response.status_code >= 400:
                    raise GraphUnavailable(f"the media URL answered HTTP {response.status_code}")
                data = await read_within(response.aiter_bytes(), limit_bytes)
        except httpx.HTTPError as err:
            raise GraphUnavailable(f"the media could not be fetched: {type(err).__name__}") from None
        return Download(data, mime) if data is not None else larger_than(limit_bytes)
