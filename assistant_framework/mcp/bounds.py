"""What is read of an outside server's message, on either transport: at most ``MAX_MESSAGE_BYTES`` (decoded), and of
an answer at most ``MAX_PARTS`` parts built (the rest dropped before pydantic makes objects of them, their number
kept in the answer's ``_meta`` under ``LEFT_OUT`` for results.py to say).

stdio.py applies both to each line a server writes. Over streamable HTTP, ``bound_json_answer`` (an httpx response
hook) puts them between the connection and the SDK for every JSON answer: the SDK read a body whole, whatever its
size, and decoded a gzip body whatever it unpacked to (2 MB of gzip took 9.6 GB of the bot's memory). An SSE
stream's events are bounded by the SDK (``MAX_EVENT_BYTES``, passed to it: an event past it ends the stream), and
``bound_event_stream`` ends the stream answering a request once the call's time is up or ``MAX_MESSAGE_BYTES`` came
without the answer: the SDK read it for as long as the server wrote, keep-alives or notifications and no answer,
long after the call had given up (a gigabyte in ten seconds, on and on).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import httpx2

from assistant_framework.mcp.results import LEFT_OUT, MAX_FILE_BYTES, MAX_PARTS

#: The largest message read from a server: one part of the largest file an answer may hold (``MAX_FILE_BYTES``,
#: as base64) and room around it.
MAX_MESSAGE_BYTES = MAX_FILE_BYTES * 4 // 3 + 4 * 1024 * 1024
#: A message past the bound, as the connection names it ("it sent ..."; over HTTP the SDK quotes it in the error the
#: call gets, and the connection says it in its own words).
TOO_LARGE = f"a message larger than {MAX_MESSAGE_BYTES // (1024 * 1024)} MB"
#: A message at most this long is built as it is: it cannot hold enough parts to matter.
CHECKED_ABOVE = 256 * 1024
#: The largest SSE event read (the SDK's own bound, which it applies to every event stream, given to it here).
MAX_EVENT_BYTES = 1024 * 1024
#: An event past ``MAX_EVENT_BYTES``, as the SDK words it in the error the call gets, and as the connection says it.
EVENT_TOO_LARGE = f"exceeded the {MAX_EVENT_BYTES} byte limit"
EVENT_TOO_LARGE_SAID = f"a message larger than {MAX_EVENT_BYTES // (1024 * 1024)} MB"
#: An answer's event stream past ``MAX_MESSAGE_BYTES`` without the answer ("it sent ...").
STREAM_TOO_LARGE = f"more than {MAX_MESSAGE_BYTES // (1024 * 1024)} MB without an answer"


def cut_parts(message: object) -> object:
    """``message`` (a JSON-RPC message as parsed) with its answer's parts past ``MAX_PARTS`` dropped and counted."""
    result = message.get("result") if isinstance(message, dict) else None
    content = result.get("content") if isinstance(result, dict) else None
    if isinstance(result, dict) and isinstance(content, list) and len(content) > MAX_PARTS:
        meta = result.get("_meta")
        result["content"] = content[:MAX_PARTS]
        result["_meta"] = {**(meta if isinstance(meta, dict) else {}), LEFT_OUT: len(content) - MAX_PARTS}
    return message


class _BoundedJson(httpx2.AsyncByteStream):
    """A JSON answer's body, decoded here within ``MAX_MESSAGE_BYTES`` (gzip or deflate, whatever was asked for)
    and given on whole, its parts cut; past the bound ``httpx2.StreamError(TOO_LARGE)``."""

    def __init__(self, raw: httpx2.AsyncByteStream, encoding: str) -> None:
        self._raw = raw
        self._encoding = encoding

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise httpx2.StreamError(f"the answer came in an encoding not asked for ({self._encoding[:40]})")
        unpack = zlib.decompressobj(zlib.MAX_WBITS | 32) if self._encoding not in ("", "identity") else None
        body = bytearray()
        async for chunk in self._raw:
            room = MAX_MESSAGE_BYTES - len(body)
            try:
                piece = unpack.decompress(chunk, room + 1) if unpack is not None else chunk
            except zlib.error as err:
                raise httpx2.StreamError(f"the answer could not be unpacked ({err})") from None
            body += piece
            if len(body) > MAX_MESSAGE_BYTES:
                raise httpx2.StreamError(TOO_LARGE)
        if len(body) > CHECKED_ABOVE:
            try:
                body = bytearray(json.dumps(cut_parts(json.loads(body)), ensure_ascii=False).encode("utf-8"))
            except ValueError:
                pass  # not JSON: the SDK says so
        yield bytes(body)

    async def aclose(self) -> None:
        await self._raw.aclose()


async def bound_json_answer(response: httpx2.Response) -> None:
    """An httpx response hook (before the body is read): a JSON answer's body comes through ``_BoundedJson``."""
    if not response.headers.get("content-type", "").lower().startswith("application/json"):
        return
    encoding = response.headers.get("content-encoding", "").strip().lower()
    response.headers.pop("content-encoding", None)
    response.headers.pop("content-length", None)  # the length of what is given on is not the server's
    assert isinstance(response.stream, httpx2.AsyncByteStream)
    response.stream = _BoundedJson(response.stream, encoding)


class _BoundedEvents(httpx2.AsyncByteStream):
    """An answer's event stream, read for at most ``seconds`` and ``MAX_MESSAGE_BYTES``; past either,
    ``httpx2.SSEError`` ends it (the SDK ends the stream on it and puts its words in the call's error)."""

    def __init__(self, raw: httpx2.AsyncByteStream, seconds: float) -> None:
        self._raw = raw
        self._seconds = seconds

    async def __aiter__(self) -> AsyncIterator[bytes]:
        deadline = anyio.current_time() + self._seconds
        chunks = self._raw.__aiter__()
        read = 0
        while True:
            try:
                with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise httpx2.SSEError(f"the answer's event stream was still open after {self._seconds:g} s") from None
            read += len(chunk)
            if read > MAX_MESSAGE_BYTES:
                raise httpx2.SSEError(STREAM_TOO_LARGE)
            yield chunk

    async def aclose(self) -> None:
        await self._raw.aclose()


def bound_event_stream(seconds: float) -> Callable[[httpx2.Response], Awaitable[None]]:
    """An httpx response hook: the event stream answering a request (a POST, or its resumption with
    ``Last-Event-ID``) is read for at most ``seconds`` (the call's time bound and a margin) and at most
    ``MAX_MESSAGE_BYTES`` (keep-alives and notifications included: an answer comes in far less). The server's own
    stream for what it sends unasked (a GET without ``Last-Event-ID``) is left open, as the protocol has it."""

    async def hook(response: httpx2.Response) -> None:
        if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            return
        request = response.request
        if request.method != "POST" and "last-event-id" not in request.headers:
            return
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _BoundedEvents(response.stream, seconds)

    return hook
