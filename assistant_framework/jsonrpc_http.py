"""JSON-RPC 2.0 over HTTP, for a daemon on this machine that speaks it (signal-cli's ``daemon --http``): calls
POSTed to one path, one or a batch (the answers matched by their ids), and a Server-Sent Events stream of JSON
objects read by httpx-sse. The daemon's client names its own errors: ``unavailable(text)`` when the server cannot
be reached or answers with no JSON-RPC answer, ``error(code, message, method, data)`` for an error it answered.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from assistant_framework.tls import shared_context

log = logging.getLogger(__name__)


class JsonRpcHttp:
    """One connection pool to ``base_url`` (``name``: the server, as its errors say); coroutines on the caller's
    event loop. ``defaults``: the params every call and the event stream carry unless a call gives them."""

    def __init__(
        self,
        base_url: str,
        name: str,
        rpc_path: str,
        *,
        unavailable: type[Exception],
        error: type[Exception],
        defaults: dict[str, Any],
        timeout: float,
    ) -> None:
        self.base_url, self.name, self.rpc_path = base_url.rstrip("/"), name, rpc_path
        self.unavailable, self.error, self.defaults = unavailable, error, defaults
        self._ids = itertools.count(1)
        # Loopback only, never through a proxy from the environment.
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=5.0), trust_env=False, verify=shared_context(trust_env=False)
        )

    async def close(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    def _request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "method": method, "id": next(self._ids)}
        params = {**self.defaults, **{k: v for k, v in (params or {}).items() if v is not None}}
        if params:
            body["params"] = params
        return body

    async def _post(self, body: Any, max_bytes: int | None = None) -> Any:
        where = f"{self.name} at {self.base_url}"
        try:
            async with self._http.stream("POST", f"{self.base_url}{self.rpc_path}", json=body) as resp:
                if resp.status_code != 200:
                    raise self.unavailable(f"{where} answered HTTP {resp.status_code}")
                content = bytearray()
                async for chunk in resp.aiter_bytes():
                    content += chunk
                    if max_bytes is not None and len(content) > max_bytes:
                        from assistant_framework.http_deadline import BodyTooLarge  # on use: it loads requests

                        raise BodyTooLarge(max_bytes)  # the rest is not read
        except httpx.HTTPError as err:
            raise self.unavailable(f"{where} is not reachable: {type(err).__name__}") from err
        try:
            return json.loads(content)
        except ValueError as err:
            raise self.unavailable(f"{where} answered no JSON") from err

    def _result(self, answer: Any, method: str) -> Any:
        if not isinstance(answer, dict):
            raise self.unavailable(f"{self.name} {method}: unexpected answer {str(answer)[:100]!r}")
        error = answer.get("error")
        if error:
            raise self.error(int(error.get("code", 0)), str(error.get("message", "")), method, error.get("data"))
        return answer.get("result")

    async def rpc(self, method: str, params: dict[str, Any] | None = None, max_bytes: int | None = None) -> Any:
        """Call one method; its result, or raises ``error`` / ``unavailable`` (``http_deadline.BodyTooLarge`` when
        the answer passes ``max_bytes``: an attachment's bytes)."""
        return self._result(await self._post(self._request(method, params), max_bytes), method)

    async def batch(self, calls: list[tuple[str, dict[str, Any] | None]]) -> list[Any]:
        """Call several methods in one request; each result or its error, in call order (raises ``unavailable``)."""
        bodies = [self._request(m, p) for m, p in calls]
        answers = await self._post(bodies) or []
        by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
        out: list[Any] = []
        for body in bodies:
            try:
                out.append(self._result(by_id.get(body["id"]), body["method"]))
            except (self.error, self.unavailable) as err:
                out.append(err)
        return out

    async def stream(
        self, path: str, on_open: Callable[[], None] | None, read_timeout: float
    ) -> AsyncIterator[tuple[str, Any]]:
        """Each event of the stream at ``path`` that carries JSON, as (its name, the JSON), until the stream ends;
        raises ``unavailable`` on errors. ``read_timeout`` without a byte (keep-alive comments count) means the
        server is gone; ``on_open()`` runs once the stream is open."""
        where = f"{self.name} events at {self.base_url}"
        try:
            timeout = httpx.Timeout(5.0, read=read_timeout)
            url, params = f"{self.base_url}{path}", self.defaults or None
            async with aconnect_sse(self._http, "GET", url, params=params, timeout=timeout) as source:
                if source.response.status_code != 200:
                    raise self.unavailable(f"{where} answered HTTP {source.response.status_code}")
                if on_open is not None:
                    on_open()
                async for sse in source.aiter_sse():
                    if not sse.data:
                        continue
                    try:
                        data = json.loads(sse.data)
                    except ValueError:
                        log.warning("%s: an event that is not JSON was skipped (%d bytes)", self.name, len(sse.data))
                        continue
                    yield sse.event, data
        except httpx.HTTPError as err:
            raise self.unavailable(f"{where}: {type(err).__name__}") from err
