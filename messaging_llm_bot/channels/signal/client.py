"""Async client of the ``signal-cli daemon --http`` API (signal-cli-jsonrpc(5)): JSON-RPC 2.0 calls to
``POST /api/v1/rpc``, one or a batch (an error answered is ``SignalRpcError``, a daemon that cannot be reached
``SignalUnavailable``), and the Server-Sent Events of ``GET /api/v1/events``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from assistant_framework.jsonrpc_http import JsonRpcHttp
from messaging_llm_bot.channels.contract import DeliveryError

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


class SignalClient(JsonRpcHttp):
    """One daemon connection pool (assistant_framework/jsonrpc_http.py: ``rpc``, ``batch``); the account in every
    call, which a multi-account daemon needs and a single one ignores."""

    def __init__(self, base_url: str, account: str | None = None, *, timeout: float = RPC_TIMEOUT_SECONDS) -> None:
        defaults = {"account": account} if account else {}
        super().__init__(
            base_url,
            "signal-cli",
            "/api/v1/rpc",
            unavailable=SignalUnavailable,
            error=SignalRpcError,
            defaults=defaults,
            timeout=timeout,
        )

    async def events(
        self, on_open: Callable[[], None] | None = None, read_timeout: float = 60.0
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield receive objects from the event stream until it ends; raises SignalUnavailable on errors. The
        daemon sends a keep-alive every 15 s, so ``read_timeout`` without any byte means it is gone. ``on_open()``
        runs once the stream is open (the daemon is subscribed for us from then on)."""
        async for name, data in self.stream("/api/v1/events", on_open, read_timeout):
            obj = unwrap_event(data) if name in ("receive", "message") else None
            if obj is not None:
                yield obj
