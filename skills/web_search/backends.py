"""The search backends: one function per API, each returning ``Hit`` records or raising ``SearchError``
with one sentence the model can pass on (no key, quota, the backend down). Pure parsing is kept
apart from the HTTP exchange so each API's documented shape is read in one place.

- SearXNG: ``GET <url>/search?q=...&format=json`` -> ``{"results": [{"title", "url", "content"}]}``
  (403 when the instance has not enabled the JSON format).
- Brave: ``GET <url>/res/v1/web/search?q=...&count=n`` with ``X-Subscription-Token`` ->
  ``{"web": {"results": [{"title", "url", "description"}]}}``; errors are
  ``{"type": "ErrorResponse", "error": {"code", "detail", "status"}}`` (a bad key is a 422).
- Tavily: ``POST <url>/search`` with a bearer key and ``{"query", "max_results"}`` ->
  ``{"results": [{"title", "url", "content"}]}``; errors are ``{"detail": {"error": ...}}`` (432: the
  plan's limit).
- DuckDuckGo: through the ``ddgs`` library (no key; it honours ``DDGS_PROXY``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assistant_framework.config.settings.search import SearchSettings
from assistant_framework.http_deadline import BodyTooLarge, DeadlineExceeded, bounded_request, deadline_session
from assistant_framework.json_types import JsonObject

DEFAULT_URLS = {"brave": "https://api.search.brave.com", "tavily": "https://api.tavily.com"}
MAX_BYTES = 2_000_000
USER_AGENT = "assistant-framework/0.1 (personal assistant)"


class SearchError(Exception):
    """A search that did not work; the message is one sentence for the model."""


@dataclass(frozen=True)
class Hit:
    """One result as the backend gave it (cleaned and cut by the skill)."""

    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class Backend:
    """Where and how to search: the owner's ``search`` config, read once per call."""

    name: str
    url: str
    api_key: str
    timeout: float


def _rows(value: object) -> list[JsonObject]:
    return [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []


def searxng_hits(body: object) -> list[Hit]:
    """The hits of a SearXNG JSON answer (pure)."""
    rows = _rows(body.get("results")) if isinstance(body, dict) else []
    return [Hit(str(r.get("title") or ""), str(r.get("url") or ""), str(r.get("content") or "")) for r in rows]


def brave_hits(body: object) -> list[Hit]:
    """The hits of a Brave web search answer (pure)."""
    web = body.get("web") if isinstance(body, dict) else None
    rows = _rows(web.get("results")) if isinstance(web, dict) else []
    return [Hit(str(r.get("title") or ""), str(r.get("url") or ""), str(r.get("description") or "")) for r in rows]


def tavily_hits(body: object) -> list[Hit]:
    """The hits of a Tavily search answer (pure)."""
    rows = _rows(body.get("results")) if isinstance(body, dict) else []
    return [Hit(str(r.get("title") or ""), str(r.get("url") or ""), str(r.get("content") or "")) for r in rows]


def _detail(body: object) -> str:
    """The error text an API put in its body: Brave's ``error.detail``, Tavily's ``detail.error``."""
    if not isinstance(body, dict):
        return ""
    error, detail = body.get("error"), body.get("detail")
    if isinstance(error, dict):
        return str(error.get("detail") or error.get("code") or "")
    if isinstance(detail, dict):
        return str(detail.get("error") or "")
    return str(detail or error or "")[:200]


def _code(body: object) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    return str(error.get("code") or "") if isinstance(error, dict) else ""


LABELS = {"searxng": "SearXNG", "brave": "Brave Search", "tavily": "Tavily", "duckduckgo": "DuckDuckGo"}
#: What the owner checks when a backend cannot be reached.
DDG_CHECK = "check this machine's internet connection and DNS (and DDGS_PROXY if you use a proxy)"


def label_of(backend: str) -> str:
    """The backend as a sentence names it (``SearXNG``, ``Brave Search``)."""
    return LABELS.get(backend, backend)


def what_to_check(backend: Backend) -> str:
    """Where the owner looks when ``backend`` is not reachable (pure)."""
    if backend.name == "searxng":
        return "check that the instance runs and search.url"
    if backend.url:
        return "check search.url and that the server runs"
    return "check this machine's internet connection"


def refusal(backend: str, status: int, body: object) -> str:
    """One sentence for an HTTP error answer of ``backend`` (pure)."""
    label = label_of(backend)
    detail = _detail(body).strip().rstrip(".")
    said = f" ({detail[:160]})" if detail else ""
    if backend == "searxng" and status == 403:
        return (
            "the SearXNG instance refuses JSON answers: the owner must add json to search.formats in its settings.yml"
        )
    if status in (401, 403) or _code(body).startswith("SUBSCRIPTION_TOKEN"):
        return f"{label} refused the API key{said}: the owner must check search.api_key"
    if status in (402, 432, 433):
        return f"the {label} plan's usage limit is used up{said}"
    if status == 429:
        return f"{label} says too many searches{said}: try again later"
    if status >= 500:
        return f"{label} is not working right now (HTTP {status}): try again later"
    return f"{label} refused the search (HTTP {status}){said}"


def _exchange(backend: Backend, method: str, url: str, **kwargs: Any) -> object:
    """One bounded HTTP exchange; the JSON body (any JSON value), or SearchError with one sentence."""
    with deadline_session(pool_size=1) as session:
        try:
            answer = bounded_request(
                session, method, url, seconds=backend.timeout, max_bytes=MAX_BYTES, allow_redirects=False, **kwargs
            )
        except DeadlineExceeded:
            raise SearchError(
                f"{label_of(backend.name)} did not answer within {backend.timeout:g} s: {what_to_check(backend)}"
            ) from None
        except BodyTooLarge:
            raise SearchError(f"{label_of(backend.name)} sent an answer over {MAX_BYTES} bytes") from None
        except Exception as exc:  # a refused connection, a bad address: the backend is not reachable
            raise SearchError(
                f"{label_of(backend.name)} at {url.split('?')[0]} is not reachable ({_why(exc)}): "
                f"{what_to_check(backend)}"
            ) from None
    try:
        body = answer.json()
    except ValueError:
        body = None
    if answer.status >= 400:
        raise SearchError(refusal(backend.name, answer.status, body))
    if body is None:
        raise SearchError(
            f"{label_of(backend.name)} did not answer with JSON (HTTP {answer.status}): "
            f"{what_to_check(backend)} (is it the search API?)"
        )
    return body


def _why(exc: BaseException) -> str:
    """A failed connection in a few words (never the library's raw, cut-off text)."""
    text = f"{type(exc).__name__} {exc}".lower()
    if any(word in text for word in ("name or service", "nodename", "resolv", "dns", "getaddrinfo")):
        return "the name did not resolve"
    if "refused" in text:
        return "connection refused"
    if "timed out" in text or "timeout" in text:
        return "the connection timed out"
    if "ssl" in text or "certificate" in text:
        return "the TLS handshake failed"
    return "the connection failed"


def _headers(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"User-Agent": USER_AGENT, "Accept": "application/json", **(extra or {})}


def search_searxng(backend: Backend, query: str, count: int) -> list[Hit]:
    if not backend.url:
        raise SearchError("search.url is not set: the owner must give the address of their SearXNG instance")
    body = _exchange(
        backend,
        "GET",
        backend.url.rstrip("/") + "/search",
        params={"q": query, "format": "json"},
        headers=_headers(),
    )
    return searxng_hits(body)[:count]


def search_brave(backend: Backend, query: str, count: int) -> list[Hit]:
    if not backend.api_key:
        raise SearchError("Brave Search needs an API key: the owner must set search.api_key or search.api_key_env")
    body = _exchange(
        backend,
        "GET",
        (backend.url or DEFAULT_URLS["brave"]).rstrip("/") + "/res/v1/web/search",
        params={"q": query, "count": count},
        headers=_headers({"X-Subscription-Token": backend.api_key}),
    )
    return brave_hits(body)[:count]


def search_tavily(backend: Backend, query: str, count: int) -> list[Hit]:
    if not backend.api_key:
        raise SearchError("Tavily needs an API key: the owner must set search.api_key or search.api_key_env")
    body = _exchange(
        backend,
        "POST",
        (backend.url or DEFAULT_URLS["tavily"]).rstrip("/") + "/search",
        json={"query": query, "max_results": count, "search_depth": "basic"},
        headers=_headers({"Authorization": f"Bearer {backend.api_key}"}),
    )
    return tavily_hits(body)[:count]


def search_duckduckgo(backend: Backend, query: str, count: int) -> list[Hit]:
    try:
        from ddgs import DDGS
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException
    except ImportError:
        raise SearchError(
            "the DuckDuckGo backend needs the ddgs package, which make install brings: the owner must run make "
            "install in the checkout (or choose another search.backend)"
        ) from None
    try:
        rows = DDGS(timeout=max(1, int(backend.timeout))).text(query, max_results=count, backend="duckduckgo")
    except RatelimitException:
        raise SearchError("DuckDuckGo says too many searches: try again later") from None
    except TimeoutException:
        raise SearchError(f"DuckDuckGo did not answer within {backend.timeout:g} s: {DDG_CHECK}") from None
    except DDGSException as exc:
        if "no results" in str(exc).lower():
            return []
        raise SearchError(f"DuckDuckGo is not reachable ({_why(exc)}): {DDG_CHECK}") from None
    except Exception as exc:  # the library's HTTP client fails in its own ways
        raise SearchError(f"DuckDuckGo is not reachable ({_why(exc)}): {DDG_CHECK}") from None
    return [Hit(str(r.get("title") or ""), str(r.get("href") or ""), str(r.get("body") or "")) for r in _rows(rows)]


SEARCHES: dict[str, Callable[[Backend, str, int], list[Hit]]] = {
    "searxng": search_searxng,
    "brave": search_brave,
    "tavily": search_tavily,
    "duckduckgo": search_duckduckgo,
}


def api_key(section: SearchSettings) -> str:
    """``search.api_key``, else the environment variable named by ``search.api_key_env``."""
    key = section.api_key
    if not key and section.api_key_env:
        key = os.environ.get(section.api_key_env, "")
    return key.strip()
