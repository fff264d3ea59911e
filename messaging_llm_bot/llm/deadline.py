"""An overall deadline for one model call: ``timeout_seconds`` bounds the whole call, not each read.

`requests`' timeout applies to each socket read, so a server that sends one chunk and then a
keep-alive comment every few seconds (or, to a call that is not streamed, whitespace before its
JSON) would hold a turn forever. ``CallDeadline`` is the framework's ``http_deadline.Deadline``:
used as a ``with`` block around the call, the model client's session cuts the connection when it
passes (headers, body, silence or trickle alike); ``lines`` also checks the clock after each line
of a stream and shrinks the socket's read timeout to the time left.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from typing import Any

from assistant_framework.http_deadline import Deadline


class CallDeadlineExceeded(Exception):
    """The call's overall deadline passed while its answer was still arriving."""


def response_socket(response: Any) -> socket.socket | None:
    """The socket under a streamed `requests` response (urllib3 2.x), or None when not reachable."""
    connection = getattr(getattr(response, "raw", None), "connection", None)
    sock = getattr(connection, "sock", None)
    return sock if isinstance(sock, socket.socket) else None


class CallDeadline(Deadline):
    """``seconds`` from now for one model call; ``lines()`` enforces it on a streamed body."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.lines_seen = 0
        self.chars_seen = 0

    def lines(self, response: Any, lines: Iterable[str]) -> Iterator[str]:
        """Yield ``lines`` until the deadline; then raise CallDeadlineExceeded."""
        sock = response_socket(response)
        self._limit(sock)
        for line in lines:
            if self.expired:
                raise CallDeadlineExceeded
            self.lines_seen += 1
            self.chars_seen += len(line)
            yield line
            self._limit(sock)
        if self.fired:  # the connection was cut at the deadline: that end is not the stream's end
            raise CallDeadlineExceeded

    def _limit(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        left = self.remaining()
        if left <= 0:
            raise CallDeadlineExceeded
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


def answer_deadline_detail(seconds: float, partial: bytes) -> str:
    """What the user is told when an answer that is not streamed outlasts ``timeout_seconds``."""
    if not partial:
        got = "nothing of the answer had arrived"
    elif not partial.strip():
        got = f"only {len(partial)} bytes of blank keep-alive had arrived"
    else:
        got = f"only {len(partial)} bytes of the answer had arrived"
    return (
        f"the answer was not finished within {seconds:g} s ({got}; the server kept the connection open "
        f"without finishing it)"
    )
