"""Errors of the Chat Completions client: parsing error bodies and classifying failures.

Pure functions plus the LLMError record. Messages never contain the API key: every
server-provided text passes through `redact` before it is stored.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Mapping
from typing import Any

from assistant_framework.redaction import redact_text

KINDS = (
    "connection",
    "timeout",
    "rate_limit",
    "server",
    "client",
    "auth",
    "context_length",
    "bad_response",
    "spending_cap",
)
# Failures after which the next runner is worth trying.
FAILOVER_KINDS = frozenset({"connection", "timeout", "rate_limit", "server", "bad_response"})

CONTEXT_LENGTH_RE = re.compile(
    r"maximum context length|context_length_exceeded|exceed_context_size_error"
    r"|context length|too many tokens"
    # llama.cpp before exceed_context_size_error (400, or 500 in some builds); vLLM's engine check.
    r"|exceeds the available context size|longer than the maximum model length",
    re.IGNORECASE,
)
_QUOTA_RE = re.compile(r"insufficient_quota", re.IGNORECASE)
_DETAIL_MAX = 200


class LLMError(Exception):
    """A failed model call; `kind` says what the caller can do about it.

    kind: 'connection', 'timeout', 'rate_limit', 'server', 'client', 'auth',
    'context_length' (trim history and retry), 'bad_response' or 'spending_cap' (every runner is at a
    spending cap: nothing was sent; ``detail`` is the whole sentence).
    `attempts` holds the errors of runners tried before this one.
    """

    def __init__(
        self,
        kind: str,
        detail: str,
        *,
        runner: str | None = None,
        base_url: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        quota: bool = False,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown LLMError kind {kind!r}")
        self.kind = kind
        self.detail = one_line(detail) if kind != "spending_cap" else " ".join(detail.split())
        self.runner = runner
        self.base_url = base_url
        self.status = status
        self.retry_after = retry_after
        self.quota = quota
        self.attempts: list[LLMError] = []
        #: The model the failed call asked for (the runner's configured one; the client sets it): /stats counts a
        #: stopped or failed call under it, not under "unknown".
        self.model: str | None = None
        #: The request reached the server, which may have worked on it: the call was cut (its deadline, a
        #: stop) or broke off after a 2xx status. Its estimate is counted against the caps (llm/caps.py).
        self.sent = False
        super().__init__(self.detail)

    @property
    def failover(self) -> bool:
        """True when another runner may succeed where this one failed."""
        return self.kind in FAILOVER_KINDS

    def user_message(self) -> str:
        """One short sentence naming the endpoint (never the key) and what went wrong."""
        if self.kind == "spending_cap":
            return self.detail
        where = f"'{self.runner}' ({self.base_url})" if self.runner else f"({self.base_url})"
        server = f"The model server {where}"
        http = f" (HTTP {self.status})" if self.status else ""
        detail = self.detail.rstrip(" .") or "no details"
        if self.kind == "connection":
            text = f"{server} is not reachable: {detail}"
        elif self.kind == "timeout":
            text = f"{server} timed out{http}: {detail}"
        elif self.kind == "rate_limit" and self.quota:
            text = f"{server} refused the request because the account quota is used up{http}: {detail}"
        elif self.kind == "rate_limit":
            text = f"{server} is rate-limiting requests{http}: {detail}"
        elif self.kind == "server":
            text = f"{server} failed with an internal error{http}: {detail}"
        elif self.kind == "auth":
            text = f"{server} rejected the API key{http}: {detail}"
        elif self.kind == "context_length":
            text = f"The conversation is too long for the model on {where}{http}: {detail}"
        elif self.kind == "bad_response":
            text = f"{server} sent a response that could not be read{http}: {detail}"
        else:
            text = f"{server} rejected the request{http}: {detail}"
        others = len(self.attempts)
        if others:
            text += f" ({others} other server{'s' if others > 1 else ''} also failed)"
        return text + "."

    def __str__(self) -> str:
        return self.user_message()


def one_line(text: str) -> str:
    """Collapse whitespace and cut to a short single line."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= _DETAIL_MAX else flat[: _DETAIL_MAX - 1] + "…"


def redact(text: str, secret: str | None) -> str:
    """Replace `secret` and any run of 8+ of its characters (servers echo cut or masked keys)."""
    return redact_text(text, [secret]) if secret else text


def parse_error_body(body: str) -> tuple[str, str]:
    """(message, code-and-type text) from any of the error shapes servers send.

    Accepts `{"error": {...}}`, `{"error": "str"}`, `{"object": "error", "message": ...}`,
    other JSON, and non-JSON bodies (returned as the message).
    """
    try:
        data: Any = json.loads(body)
    except ValueError:
        return body.strip(), ""
    if not isinstance(data, dict):
        return body.strip(), ""
    err = data.get("error", data)
    if isinstance(err, str):
        return err, ""
    if not isinstance(err, dict):
        return body.strip(), ""
    message = err.get("message") or err.get("detail") or err.get("msg") or ""
    if not isinstance(message, str):
        message = json.dumps(message, ensure_ascii=False)
    codes = " ".join(str(err[k]) for k in ("code", "type") if err.get(k) not in (None, ""))
    return message or body.strip(), codes


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `Retry-After` (seconds or HTTP date) or `retry-after-ms`; None if absent."""
    value = headers.get("Retry-After") or headers.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, parsed.timestamp() - time.time())
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            return None
    return None


def classify(status: int | None, message: str, codes: str = "") -> tuple[str, bool]:
    """(kind, quota) for an HTTP status and error text; status None means an in-stream error."""
    text = f"{message} {codes}"
    if CONTEXT_LENGTH_RE.search(text):
        return "context_length", False
    if status in (401, 403):
        return "auth", False
    if status == 429 or (status is None and re.search(r"rate|429", codes, re.IGNORECASE)):
        return "rate_limit", bool(_QUOTA_RE.search(text))
    if status == 408:
        return "timeout", False
    if status is None or status >= 500:
        return "server", False
    if 400 <= status < 500:
        return "client", False
    return "bad_response", False


def redirect_detail(headers: Mapping[str, str]) -> str:
    """Why a redirect is an error: the prompt (the conversation, memory) would go to an address the owner never
    configured, maybe off the machine when base_url is a local server's."""
    # Any case: requests' headers match either way, http_deadline's Answer holds them lower-case.
    target = next((v for k, v in headers.items() if k.lower() == "location"), "") or "an address it did not name"
    return f"it redirects to {target}, which is not followed (set base_url to that address if it is the right one)"


def http_error(
    status: int,
    body: str,
    headers: Mapping[str, str],
    *,
    runner: str,
    base_url: str,
    secret: str = "",
    unset_key_env: str = "",
) -> LLMError:
    """An LLMError for a non-2xx HTTP answer; ``unset_key_env`` names the variable ``api_key_env`` names
    when it is not set (a refused key then says so, not only "HTTP 401")."""
    message, codes = parse_error_body(body)
    kind, quota = classify(status, message, codes)
    detail = redact(redirect_detail(headers) if 300 <= status < 400 else message or f"HTTP {status}", secret)
    if kind == "auth" and unset_key_env:
        detail = (
            f"no API key was sent: the environment variable {unset_key_env} (the runner's api_key_env) is not set "
            f"where the bot runs ({detail.rstrip(' .')})"
        )
    return LLMError(
        kind,
        detail,
        runner=runner,
        base_url=base_url,
        status=status,
        retry_after=parse_retry_after(headers),
        quota=quota,
    )


_REASONS = (
    ("connection refused", "connection refused"),
    ("name or service not known", "the host name could not be resolved"),
    ("nodename nor servname", "the host name could not be resolved"),
    ("failed to resolve", "the host name could not be resolved"),
    ("temporary failure in name resolution", "the host name could not be resolved"),
    ("network is unreachable", "the network is unreachable"),
    ("no route to host", "no route to host"),
    ("connection reset", "the connection was reset"),
    ("remotedisconnected", "the server closed the connection"),
    ("connection aborted", "the connection was aborted"),
    ("certificate verify failed", "its TLS certificate could not be verified"),
    ("ssl", "the TLS handshake failed"),
    ("connecttimeout", "the connection timed out"),
    ("connect timeout", "the connection timed out"),
)


def connection_reason(exc: BaseException) -> str:
    """A short human reason for a requests connection failure (no URL, no stack)."""
    text = f"{type(exc).__name__} {exc}".lower()
    for needle, reason in _REASONS:
        if needle in text:
            return reason
    return "the connection failed"


_REJECTION_RE = re.compile(r"response_format|json_schema|json_object|grammar", re.IGNORECASE)
_TOOLS_REJECTION_RE = re.compile(r"\btools?\b|tool_choice|function", re.IGNORECASE)


def names_response_format(err: LLMError, mode: str = "json_schema") -> bool:
    """True when a failure is the server rejecting the requested format (HTTP 4xx/5xx naming it)."""
    if err.status is None or err.status < 400 or err.status in (401, 403, 408, 429):
        return False
    pattern = _TOOLS_REJECTION_RE if mode == "tools" else _REJECTION_RE
    return err.kind != "context_length" and bool(pattern.search(err.detail or ""))
