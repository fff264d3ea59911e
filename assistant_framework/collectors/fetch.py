"""HTTP downloads for collectors: one deadline for the whole download, and a small bounded pool.

``requests``' own timeout limits each socket read, so a server that sends one byte
every few seconds never trips it. :func:`fetch` bounds the whole exchange, connect to last byte,
by the source's deadline (``assistant_framework.http_deadline``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, TypeVar

import requests

from assistant_framework.http_deadline import BodyTooLarge, DeadlineExceeded, bounded_request, deadline_session

#: Sources of one run fetched at the same time (I/O bound; small so one run stays polite).
POOL_SIZE = 4
#: A source bigger than this is refused rather than held in memory.
MAX_BYTES = 20 * 1024 * 1024

T = TypeVar("T")
S = TypeVar("S")


class FetchError(Exception):
    """The download failed or missed its deadline; the message says why (not which URL)."""


@dataclass
class Fetched:
    """One HTTP answer: status, lower-case headers, body and the final URL (after redirects)."""

    status: int
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes = b""


def fetch(url: str, *, timeout: float, headers: dict[str, str] | None = None, max_bytes: int = MAX_BYTES) -> Fetched:
    """GET ``url`` with ``timeout`` seconds for everything from connect to the last byte."""
    try:
        # The deadline session cuts the connection at the deadline: a server trickling its headers
        # or its body (or never closing a body delimited by the close) ends there.
        answer = bounded_request(
            _session(),
            "GET",
            url,
            seconds=timeout,
            max_bytes=max_bytes,
            headers=headers or {},
            timeout=(min(timeout, 10.0), timeout),
        )
    except DeadlineExceeded:
        raise FetchError(f"download not finished within {timeout:g}s (fetch_timeout_seconds)") from None
    except BodyTooLarge:
        raise FetchError(f"larger than {max_bytes // (1024 * 1024)} MB; refused") from None
    except requests.Timeout:
        raise FetchError(f"no answer within {timeout:g}s") from None
    except requests.RequestException as exc:
        raise FetchError(f"fetch failed: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - urllib3 raises its own types from a body read
        if "timed out" in str(exc).lower():
            raise FetchError(f"download not finished within {timeout:g}s (fetch_timeout_seconds)") from None
        raise FetchError(f"download failed: {type(exc).__name__}: {exc}") from None
    out = Fetched(status=answer.status, url=answer.url, headers=answer.headers)
    if answer.status != 304 and answer.status < 400:
        out.content = answer.content
    return out


@functools.cache
def _session() -> requests.Session:
    """The collectors' pooled session (thread-safe for GETs without cookies we rely on)."""
    return deadline_session(pool_size=POOL_SIZE)


def fetch_all(
    jobs: list[S], work: Callable[[S], T], pool_size: int = POOL_SIZE
) -> Iterator[tuple[S, T | None, BaseException | None]]:
    """Run ``work(job)`` for every job in a bounded pool; yield ``(job, result, error)`` as each finishes."""
    if not jobs:
        return
    with ThreadPoolExecutor(
        max_workers=max(1, min(pool_size, len(jobs))), thread_name_prefix="collector-fetch"
    ) as pool:
        futures: dict[Future[Any], S] = {pool.submit(work, job): job for job in jobs}
        for future in as_completed(futures):
            error = future.exception()
            yield futures[future], (None if error else future.result()), error
