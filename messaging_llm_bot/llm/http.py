"""The HTTP session for model calls, with proxy settings read from the environment once.

With ``trust_env`` on, `requests` re-reads the proxy variables (and ``~/.netrc``) on every call:
about 1 ms a call on this project's test machine. The session here has ``trust_env`` off and each
call passes the settings the environment gave once per base URL: ``HTTP(S)_PROXY``/``ALL_PROXY``
with ``NO_PROXY``, and ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE``. Changing them needs a restart
(or a ``/reload`` that changes the ``llm`` section). ``~/.netrc`` is not consulted: model servers
take a bearer key (``api_key``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import NotRequired, TypedDict

import requests
from requests.utils import get_environ_proxies

from assistant_framework.http_deadline import DeadlineAdapter


def make_session(pool_size: int) -> requests.Session:
    """A pooled session that does not read the environment per call; its connections are cut when the
    calling thread's ``CallDeadline`` passes (the whole call is bounded, not each read)."""
    session = requests.Session()
    adapter = DeadlineAdapter(pool_maxsize=max(10, pool_size))
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.trust_env = False
    return session


class NetSettings(TypedDict):
    """What `requests` would take from the environment for a call: its keyword arguments (none without an
    environment cache)."""

    proxies: NotRequired[dict[str, str]]
    verify: NotRequired[str]


def environment_settings(url: str) -> NetSettings:
    """``proxies`` and ``verify`` for calls to ``url`` as `requests` would take them from the environment."""
    settings: NetSettings = {"proxies": get_environ_proxies(url) or {}}
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        settings["verify"] = bundle
    return settings


class EnvironmentCache:
    """``environment_settings`` per base URL, computed at first use."""

    def __init__(self) -> None:
        self._by_url: dict[str, NetSettings] = {}
        self._lock = threading.Lock()

    def get(self, url: str) -> NetSettings:
        found = self._by_url.get(url)
        if found is None:
            with self._lock:
                found = self._by_url.setdefault(url, environment_settings(url))
        return found


def drain(lines: Iterator[str], limit: int = 64) -> None:
    """Read what follows ``data: [DONE]`` (the chunked body's end) so `requests` releases the
    connection to the pool instead of closing it: without this every streamed call opened a new
    TCP connection. At most ``limit`` more lines; errors are ignored (the answer is complete)."""
    try:
        for count, _ in enumerate(lines):
            if count >= limit:
                break
    except Exception:  # noqa: BLE001 - the answer is already complete; the connection just is not reused
        pass
