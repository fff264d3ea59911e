"""An overall deadline for one model call: ``timeout_seconds`` bounds the whole call, not each read.

`requests`' timeout applies to each socket read, so a server that sends one chunk and then a
keep-alive comment every few seconds would hold a turn forever. ``CallDeadline.lines`` wraps
the stream's lines: after each line it checks the clock and shrinks the socket's read timeout
to the time left, so neither a trickle nor a silence can outlast the deadline.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable, Iterator
from typing import Any


class DeadlineExceeded(Exception):
    """The call's overall deadline passed while its answer was still arriving."""


def response_socket(response: Any) -> socket.socket | None:
    """The socket under a streamed `requests` response (urllib3 2.x), or None when not reachable."""
    connection = getattr(getattr(response, "raw", None), "connection", None)
    sock = getattr(connection, "sock", None)
    return sock if isinstance(sock, socket.socket) else None


class CallDeadline:
    """``seconds`` from now; ``lines()`` enforces it on a streamed body."""

    def __init__(self, seconds: float, *, clock: Any = time.monotonic) -> None:
        self.seconds = float(seconds)
        self._clock = clock
        self.at = clock() + self.seconds
        self.expired = False
        self.lines_seen = 0
        self.chars_seen = 0

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.at - self._clock())

    def lines(self, response: Any, lines: Iterable[str]) -> Iterator[str]:
        """Yield ``lines`` until the deadline; then set ``expired`` and raise DeadlineExceeded."""
        sock = response_socket(response)
        self._limit(sock)
        for line in lines:
            if self._clock() >= self.at:
                self.expired = True
                raise DeadlineExceeded
            self.lines_seen += 1
            self.chars_seen += len(line)
            yield line
            self._limit(sock)

    def _limit(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        left = self.at - self._clock()
        if left <= 0:
            self.expired = True
            raise DeadlineExceeded
        try:
            sock.settimeout(left)  # the next read blocks no longer than the time left
        except OSError:
            pass


def stream_deadline_detail(seconds: float, text_so_far: str) -> str:
    """What the user is told when a streamed answer outlasts ``timeout_seconds``."""
    got = (
        f"only {len(text_so_far)} characters of the answer had arrived"
        if text_so_far.strip()
        else "no text of the answer had arrived"
    )
    return (
        f"the answer was not finished within {seconds:g} s ({got}; the server kept the stream open "
        f"without finishing it)"
    )
