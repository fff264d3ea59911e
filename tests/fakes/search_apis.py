"""Fake web search APIs on 127.0.0.1, one each, answering with the documented shapes and errors.

    with FakeSearXNG() as searx:                 # GET /search?q=...&format=json
        searx.results = [{"title": "T", "url": "https://x.example/", "content": "snippet"}]
        config = {"search": {"backend": "searxng", "url": searx.url}}

- ``FakeSearXNG``: ``{"query", "number_of_results", "results": [{"title", "url", "content", "engine",
  "engines", "score", "category"}], "answers", "corrections", "infoboxes", "suggestions",
  "unresponsive_engines"}``; ``json_enabled = False`` answers 403 with an HTML page, as an instance
  whose ``settings.yml`` lacks ``json`` in ``search.formats``; a request without ``format=json`` gets
  the HTML results page.
- ``FakeBrave``: ``GET /res/v1/web/search`` with ``X-Subscription-Token``: ``{"type": "search",
  "query": {"original"}, "web": {"type": "search", "results": [{"title", "url", "description"}]}}``;
  a wrong key is HTTP 422 ``{"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}}``
  and ``rate_limited = True`` answers 429 ``RATE_LIMITED``.
- ``FakeTavily``: ``POST /search`` with ``Authorization: Bearer <key>`` and ``{"query", "max_results"}``:
  ``{"query", "answer", "images", "results": [{"title", "url", "content", "score", "raw_content"}],
  "response_time"}``; a wrong key is 401 and ``usage_exceeded = True`` is 432, both
  ``{"detail": {"error": ...}}``; ``refusal`` set answers 400 with that text as the error detail (a
  backend's words in an error).

Every fake records what it was asked (``requests``: method, path, query parameters, headers, JSON
body). ``status``/``delay`` set on any of them answer every request with that HTTP status (an error
page) or after that many seconds.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes._http import FakeHandler, FakeServer


@dataclass
class SearchRequest:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: Any = None


@dataclass
class _Fake:
    """What all three share: the results to give, what was asked, the failure switches."""

    results: list[dict] = field(default_factory=list)
    requests: list[SearchRequest] = field(default_factory=list)
    status: int | None = None
    delay: float = 0.0
    server: FakeServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self.server is not None, "start() the fake first"
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> "_Fake":
        self.server = FakeServer(_Handler, self).start(type(self).__name__)
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, request: SearchRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def answer(self, request: SearchRequest) -> tuple[int, str, bytes]:
        raise NotImplementedError


def _json(status: int, body: Any) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(body).encode("utf-8")


def _html(status: int, text: str) -> tuple[int, str, bytes]:
    return status, "text/html; charset=utf-8", f"<!DOCTYPE html><html><body>{text}</body></html>".encode()


@dataclass
class FakeSearXNG(_Fake):
    json_enabled: bool = True

    def answer(self, request: SearchRequest) -> tuple[int, str, bytes]:
        if request.path != "/search":
            return _html(404, "Not Found")
        if request.params.get("format") != "json":
            return _html(200, "<article class='result'>results page</article>")
        if not self.json_enabled:
            return _html(403, "<h1>403 Forbidden</h1>")
        rows = [
            {"engine": "duckduckgo", "engines": ["duckduckgo"], "score": 1.0 / (n + 1), "category": "general", **row}
            for n, row in enumerate(self.results)
        ]
        body = {
            "query": request.params.get("q", ""),
            "number_of_results": 0,
            "results": rows,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }
        return _json(200, body)


def _brave_error(status: int, code: str, detail: str) -> tuple[int, str, bytes]:
    error = {"id": "5d832250-9396-4f6e-b84a-2a1fe524cd7d", "status": status, "code": code, "detail": detail}
    return _json(status, {"type": "ErrorResponse", "error": error, "time": int(time.time())})


@dataclass
class FakeBrave(_Fake):
    api_key: str = "brave-test-key-0123456789"
    rate_limited: bool = False

    def answer(self, request: SearchRequest) -> tuple[int, str, bytes]:
        if request.path != "/res/v1/web/search":
            return _json(404, {"type": "ErrorResponse", "error": {"status": 404, "code": "NOT_FOUND"}})
        if request.headers.get("x-subscription-token") != self.api_key:
            return _brave_error(422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.")
        if self.rate_limited:
            return _brave_error(429, "RATE_LIMITED", "Request rate limit exceeded for plan.")
        count = int(request.params.get("count") or 20)
        rows = [{"type": "search_result", "language": "en", "family_friendly": True, **r} for r in self.results]
        body = {
            "type": "search",
            "query": {"original": request.params.get("q", ""), "more_results_available": False},
            "web": {"type": "search", "results": rows[:count], "family_friendly": True},
        }
        return _json(200, body)


@dataclass
class FakeTavily(_Fake):
    api_key: str = "tvly-test-0123456789"
    usage_exceeded: bool = False
    refusal: str | None = None

    def answer(self, request: SearchRequest) -> tuple[int, str, bytes]:
        if request.method != "POST" or request.path != "/search":
            return _json(404, {"detail": "Not Found"})
        if self.refusal is not None:
            return _json(400, {"detail": {"error": self.refusal}})
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return _json(401, {"detail": {"error": "Unauthorized: missing or invalid API key."}})
        if self.usage_exceeded:
            return _json(432, {"detail": {"error": "This request exceeds your plan's set usage limit."}})
        body = request.body if isinstance(request.body, dict) else {}
        count = int(body.get("max_results") or 5)
        rows = [{"score": 0.9, "raw_content": None, **r} for r in self.results]
        answer = {
            "query": body.get("query", ""),
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": rows[:count],
            "response_time": 0.42,
        }
        return _json(200, answer)


class _Handler(FakeHandler):
    server: FakeServer

    def _handle(self) -> None:
        fake: _Fake = self.server.fake
        parts = urlsplit(self.path)
        raw = self.read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = SearchRequest(
            method=self.command,
            path=parts.path,
            params={k: v[-1] for k, v in parse_qs(parts.query).items()},
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        fake.record(request)
        if fake.delay:
            time.sleep(fake.delay)
        if fake.status is not None:
            status, kind, data = _html(fake.status, f"<h1>{fake.status}</h1>")
        else:
            status, kind, data = fake.answer(request)
        self.guard(lambda: self.send(status, data, kind))

    do_GET = _handle  # noqa: N815 - http.server API
    do_POST = _handle  # noqa: N815
