"""Probing a model server before using it: reachable? which models? does ours exist?

Used by ``eval skills`` and ``trace replay`` (check before the first case), ``assistant
doctor`` and ``assistant setup`` (find local servers on their usual ports).
"""

from __future__ import annotations

import functools
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests

from assistant_framework.http_deadline import BodyTooLarge, DeadlineExceeded, bounded_request, deadline_session

#: A model list larger than this is refused.
MAX_ANSWER_BYTES = 4 * 1024 * 1024


@functools.cache
def _session() -> requests.Session:
    return deadline_session()


#: In a probe's error when the server took the connection but did not answer in time: it is there, but busy (a
#: single-slot server still working on an earlier request: a chat killed in mid-answer) or stuck.
BUSY = "accepted the connection but gave no answer"


#: The usual local servers and their default OpenAI-compatible base URLs.
LOCAL_SERVERS: tuple[tuple[str, str], ...] = (
    ("Ollama", "http://127.0.0.1:11434/v1"),
    ("LM Studio", "http://127.0.0.1:1234/v1"),
    ("llama.cpp server", "http://127.0.0.1:8080/v1"),
    ("vLLM / SGLang", "http://127.0.0.1:8000/v1"),
    ("SGLang", "http://127.0.0.1:30000/v1"),
)


@dataclass
class Probe:
    """What ``GET {base_url}/models`` told: reachable, the models listed (None: not offered), an error."""

    base_url: str
    reachable: bool
    models: list[str] | None = None
    error: str | None = None
    status: int | None = None
    elapsed_s: float = 0.0

    def model_problem(self, model: str) -> str | None:
        """Why ``model`` cannot be used on this server, or None (unknown when the list is not offered)."""
        if not self.reachable:
            return self.error
        if self.models is not None and model not in self.models:
            offered = ", ".join(self.models[:12]) or "none"
            return f"the server at {self.base_url} does not list the model {model!r} (it offers: {offered})"
        return None


def _unreachable_because(exc: Exception, timeout: float) -> str:
    """Why the model list could not be fetched, in the user's words."""
    if isinstance(exc, (requests.Timeout, DeadlineExceeded)):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, BodyTooLarge):
        return "the model list is larger than 4 MB"
    if isinstance(exc, requests.ConnectionError):
        return "connection refused or host unreachable: is the server running?"
    return type(exc).__name__


def _accepts(url: str, seconds: float = 1.0) -> bool:
    """Whether the server at ``url`` takes a TCP connection now (it is there, whatever it answers)."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "", port), timeout=seconds):
            return True
    except (OSError, ValueError):
        return False


def probe(base_url: str, api_key: str = "", *, timeout: float = 5.0, session: requests.Session | None = None) -> Probe:
    """``GET {base_url}/models``; never raises. A 404 means the list is not offered, not that the server is down."""
    url = base_url.rstrip("/") + "/models"
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    start = time.monotonic()
    try:
        # ``timeout`` bounds the whole answer (a server trickling it too), not each read.
        response = bounded_request(
            session or _session(), "GET", url, seconds=timeout, max_bytes=MAX_ANSWER_BYTES, headers=headers
        )
    except (requests.RequestException, DeadlineExceeded, BodyTooLarge) as exc:
        timed_out = isinstance(exc, (DeadlineExceeded, requests.ReadTimeout))
        if timed_out and _accepts(url):
            error = f"the model server at {base_url} {BUSY} within {timeout:g} s: busy with another request, or stuck"
        else:
            error = f"cannot reach the model server at {base_url} ({_unreachable_because(exc, timeout)})"
        return Probe(base_url, False, error=error, elapsed_s=time.monotonic() - start)
    elapsed = time.monotonic() - start
    if response.status in (401, 403):
        return Probe(
            base_url,
            False,
            status=response.status,
            elapsed_s=elapsed,
            error=f"the model server at {base_url} refused the API key (HTTP {response.status})",
        )
    if response.status in (404, 405, 501):
        return Probe(base_url, True, status=response.status, elapsed_s=elapsed)
    if response.status != 200:
        return Probe(
            base_url,
            False,
            status=response.status,
            elapsed_s=elapsed,
            error=f"the model server at {base_url} answered HTTP {response.status} to GET /models",
        )
    try:
        body = response.json()
    except ValueError:
        return Probe(
            base_url,
            False,
            status=200,
            elapsed_s=elapsed,
            error=f"{base_url}/models did not answer JSON: is this an OpenAI-compatible base URL ending in /v1?",
        )
    items = body.get("data") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return Probe(base_url, True, status=200, elapsed_s=elapsed)
    models = [str(item.get("id")) for item in items if isinstance(item, dict) and item.get("id")]
    return Probe(base_url, True, models=models, status=200, elapsed_s=elapsed)


def check_runner(runner: Mapping[str, Any], *, timeout: float = 5.0) -> str | None:
    """One clear error when a runner ({name, base_url, model, api_key}) cannot be used, else None."""
    env_name = str(runner.get("api_key_env") or "")
    api_key = runner.get("api_key") or os.environ.get(env_name, "")
    result = probe(str(runner.get("base_url") or ""), str(api_key or ""), timeout=timeout)
    problem = result.model_problem(str(runner.get("model") or ""))
    if problem and result.status in (401, 403) and env_name and not api_key:
        problem += f": no key was sent, the variable {env_name} (its api_key_env) is not set"
    if problem:
        return f"runner {runner.get('name', '?')!r}: {problem}"
    return None


def find_local_servers(
    *, timeout: float = 0.5, candidates: tuple[tuple[str, str], ...] = LOCAL_SERVERS
) -> list[tuple[str, Probe]]:
    """The usual local servers that answer, each with what it lists."""
    found = []
    for name, base_url in candidates:
        result = probe(base_url, timeout=timeout)
        if result.reachable:
            found.append((name, result))
    return found
