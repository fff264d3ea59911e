"""What is read of an outside server's message, on either transport: at most ``MAX_MESSAGE_BYTES`` (decoded), and of
an answer at most ``MAX_PARTS`` parts built (the rest dropped before pydantic makes objects of them, their number
kept in the answer's ``_meta`` under ``LEFT_OUT`` for results.py to say).

stdio.py applies both to each line a server writes. Over streamable HTTP, ``bound_json_answer`` (an httpx response
hook) puts them between the connection and the SDK for every JSON answer: the SDK read a body whole, whatever its
size, and decoded a gzip body whatever it unpacked to (2 MB of gzip took 9.6 GB of the bot's memory). An SSE
stream is the SDK's own: it bounds each event (1 MB).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator

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
