"""HTTP downloads for collectors: one deadline for the whole download, and a small bounded pool.

``requests``' own timeout limits each socket read, so a server that sends one byte
every few seconds never trips it. :func:`fetch` reads the body in small pieces and
gives every read only the time left until the source's deadline (connect to last byte).
"""

from __future__ import annotations

import socket
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Callable, Iterator, TypeVar

import requests

#: Sources of one run fetched at the same time (I/O bound; small so one run stays polite).
POOL_SIZE = 4
#: A source bigger than this is refused rather than held in memory.
MAX_BYTES = 20 * 1024 * 1024
READ_SIZE = 64 * 1024

T = TypeVar("T")
S = TypeVar("S")


class FetchError(Exception):
    """The download failed or missed its deadline; the message says why (not which URL)."""


@dataclass
class Fetched:
    """One HTTP answer: status, lower-case headers, body and the final URL (after redirects)."""

    status: int
    url: str
    headers: dict = field(default_factory=dict)
    content: bytes = b""


def fetch(url: str, *, timeout: float, headers: dict | None = None, max_bytes: int = MAX_BYTES) -> Fetched:
    """GET ``url`` with ``timeout`` seconds for everything from connect to the last byte."""
    deadline = time.monotonic() + timeout
    try:
        response = requests.get(url, headers=headers or {}, timeout=(min(timeout, 10.0), timeout), stream=True)
    except requests.Timeout:
        raise FetchError(f"no answer within {timeout:g}s") from None
    except requests.RequestException as exc:
        raise FetchError(f"fetch failed: {type(exc).__name__}: {exc}") from None
    with response:
        out = Fetched(
            status=response.status_code,
            url=response.url or url,
            headers={k.lower(): v for k, v in response.headers.items()},
        )
        if response.status_code == 304 or response.status_code >= 400:
            return out
        out.content = _read_body(response, deadline, timeout, max_bytes)
    return out


def _read_body(response: requests.Response, deadline: float, timeout: float, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    raw = response.raw
    reader = getattr(raw, "read1", None)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FetchError(f"download not finished within {timeout:g}s (fetch_timeout_seconds)")
        limit_socket(raw, remaining)
        try:
            # read1 returns after one socket read; read(n) would wait for n bytes of a slow drip.
            chunk = reader(READ_SIZE, decode_content=True) if reader else raw.read(READ_SIZE, decode_content=True)
        except (socket.timeout, TimeoutError):
            raise FetchError(f"download not finished within {timeout:g}s (fetch_timeout_seconds)") from None
        except Exception as exc:  # noqa: BLE001 - urllib3 wraps timeouts and resets in its own types
            if "timed out" in str(exc).lower():
                raise FetchError(f"download not finished within {timeout:g}s (fetch_timeout_seconds)") from None
            raise FetchError(f"download failed: {type(exc).__name__}: {exc}") from None
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise FetchError(f"larger than {max_bytes // (1024 * 1024)} MB; refused")
        chunks.append(chunk)


def limit_socket(raw: object, remaining: float) -> None:
    """Give the next socket read at most the time left (best effort: urllib3 internals)."""
    sock = getattr(getattr(raw, "_connection", None), "sock", None)
    if sock is None:
        fp = getattr(getattr(getattr(raw, "_fp", None), "fp", None), "raw", None)
        sock = getattr(fp, "_sock", None)
    if sock is not None:
        try:
            sock.settimeout(max(0.01, remaining))
        except OSError:
            pass


def fetch_all(
    jobs: list[S], work: Callable[[S], T], pool_size: int = POOL_SIZE
) -> Iterator[tuple[S, T | None, BaseException | None]]:
    """Run ``work(job)`` for every job in a bounded pool; yield ``(job, result, error)`` as each finishes."""
    if not jobs:
        return
    with ThreadPoolExecutor(
        max_workers=max(1, min(pool_size, len(jobs))), thread_name_prefix="collector-fetch"
    ) as pool:
        futures: dict[Future, S] = {pool.submit(work, job): job for job in jobs}
        for future in as_completed(futures):
            error = future.exception()
            yield futures[future], (None if error else future.result()), error
