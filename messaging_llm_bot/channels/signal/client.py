"""Async client of the ``signal-cli daemon --http`` API (signal-cli-jsonrpc(5)): JSON-RPC 2.0 calls to
``POST /api/v1/rpc``, one or a batch (an error answered is ``SignalRpcError``, a daemon that cannot be reached
``SignalUnavailable``), and the Server-Sent Events of ``GET /api/v1/events``, read by httpx-sse.
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
from messaging_llm_bot.channels.contract import DeliveryError

log = logging.getLogger(__name__)

RPC_TIMEOUT_SECONDS = 60.0  # a send with attachments may take a while on a slow uplink


class SignalUnavailable(RuntimeError):
    """The daemon could not be reached or answered with an HTTP error."""


#: signal-cli error codes of a call that may succeed later: IO error, rate limited.
TRANSIENT_CODES = frozenset({-3, -5})
#: Send results (``error.data.response.results[].type``) that may succeed later.
TRANSIENT_RESULTS = frozenset({"NETWORK_FAILURE", "RATE_LIMIT_FAILURE"})


class SignalRpcError(DeliveryError):
    """The daemon answered a JSON-RPC error (code, message, and signal-cli's ``data``): refused for good (not a
    Signal user, an unknown group) unless it is ``transient``."""

    def __init__(self, code: int, message: str, method: str = "", data: Any = None) -> None:
        self.code, self.message, self.data = code, message, data
        types = ", ".join(sorted(t for t in self.result_types if t))
        text = f"signal-cli {method or 'call'} failed ({code}): {message}" + (f" ({types})" if types else "")
        super().__init__(text, for_good=not self.transient)

    @property
    def transient(self) -> bool:
        """True when the same call may work later: rate limited, or the daemon could not reach the Signal
        server (a send failing that way is a user error whose results all say NETWORK_FAILURE)."""
        if self.code in TRANSIENT_CODES:
            return True
        types = self.result_types
        return bool(types) and types <= TRANSIENT_RESULTS

    @property
    def result_types(self) -> set[str]:
        """The types of the send results signal-cli put in ``data`` (``UNREGISTERED_FAILURE``...), if any."""
        response = self.data.get("response") if isinstance(self.data, dict) else None
        results = response.get("results") if isinstance(response, dict) else None
        return {str(r.get("type")) for r in results if isinstance(r, dict)} if isinstance(results, list) else set()


def unwrap_event(obj: Any) -> dict[str, Any] | None:
    """The receive object ``{"envelope": ..., "account": ...}`` of one event: plain, or in the stdio/socket forms (a
    JSON-RPC ``receive`` notification, also as a subscription's ``result``)."""
    if not isinstance(obj, dict):
        return None
    if obj.get("jsonrpc") == "2.0":
        if obj.get("method") != "receive":
            return None
        obj = obj.get("params")
        if isinstance(obj, dict) and "result" in obj and "envelope" not in obj:
            obj = obj.get("result")
    if isinstance(obj, dict) and isinstance(obj.get("envelope"), dict):
        return obj
    return None


class SignalClient:
    """One daemon connection pool; all methods are coroutines on the caller's event loop."""

    def __init__(self, base_url: str, account: str | None = None, *, timeout: float = RPC_TIMEOUT_SECONDS) -> None:
        self.base_url = base_url.rstrip("/")
        self.account = account or None
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
        params = {k: v for k, v in (params or {}).items() if v is not None}
        if self.account and "account" not in params:
            params["account"] = self.account  # needed by a multi-account daemon; ignored by a single one
        if params:
            body["params"] = params
        return body

    async def _post(self, body: Any) -> Any:
        try:
            resp = await self._http.post(f"{self.base_url}/api/v1/rpc", json=body)
        except httpx.HTTPError as err:
            raise SignalUnavailable(f"signal-cli at {self.base_url} is not reachable: {type(err).__name__}") from err
        if resp.status_code != 200:
            raise SignalUnavailable(f"signal-cli at {self.base_url} answered HTTP {resp.status_code}")
        try:
            return resp.json()
        except ValueError as err:
            raise SignalUnavailable(f"signal-cli at {self.base_url} answered no JSON") from err

    @staticmethod
    def _result(answer: Any, method: str) -> Any:
        if not isinstance(answer, dict):
            raise SignalUnavailable(f"signal-cli {method}: unexpected answer {str(answer)[:100]!r}")
        error = answer.get("error")
        if error:
            raise SignalRpcError(int(error.get("code", 0)), str(error.get("message", "")), method, error.get("data"))
        return answer.get("result")

    async def rpc(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Call one method; returns its result, raises SignalRpcError / SignalUnavailable."""
        return self._result(await self._post(self._request(method, params)), method)

    async def batch(self, calls: list[tuple[str, dict[str, Any] | None]]) -> list[Any]:
        """Call several methods in one request; each result or its SignalRpcError, in call order."""
        bodies = [self._request(m, p) for m, p in calls]
        answers = await self._post(bodies) or []
        by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
        out: list[Any] = []
        for body in bodies:
            try:
                out.append(self._result(by_id.get(body["id"]), body["method"]))
            except (SignalRpcError, SignalUnavailable) as err:
                out.append(err)
        return out

    async def events(
        self, on_open: Callable[[], None] | None = None, read_timeout: float = 60.0
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield receive objects from the event stream until it ends; raises SignalUnavailable on errors.

        The daemon sends a keep-alive every 15 s, so ``read_timeout`` without any byte means it is gone.
        ``on_open()`` runs once the stream is open (the daemon is subscribed for us from then on).
        """
        params = {"account": self.account} if self.account else None
        timeout = httpx.Timeout(5.0, read=read_timeout)
        url = f"{self.base_url}/api/v1/events"
        try:
            async with aconnect_sse(self._http, "GET", url, params=params, timeout=timeout) as source:
                status = source.response.status_code
                if status != 200:
                    raise SignalUnavailable(f"signal-cli events at {self.base_url} answered HTTP {status}")
                if on_open is not None:
                    on_open()
                async for sse in source.aiter_sse():  # keep-alive comments are no events
                    if sse.event not in ("receive", "message") or not sse.data:
                        continue
                    try:
                        obj = unwrap_event(json.loads(sse.data))
                    except ValueError:
                        log.warning("signal: an event that is not JSON was skipped (%d bytes)", len(sse.data))
                        continue
                    if obj is not None:
                        yield obj
        except httpx.HTTPError as err:
            raise SignalUnavailable(f"signal-cli events at {self.base_url}: {type(err).__name__}") from err
