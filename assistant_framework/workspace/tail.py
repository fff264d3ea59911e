"""Logs kept to their newest lines: the end of a file read from the end, and the bound an append cuts a log to.

A log that a running bot appends to for as long as it runs (a collector's runs, the jobs' runs) is cut to its
newest lines once it passes its size (``LogCap``), and a reader that wants its last lines reads only them
(``tail_bytes``): neither costs more after a year than after a week.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_BLOCK = 64 * 1024


@dataclass(frozen=True)
class LogCap:
    """Past ``max_bytes`` a log is cut to its newest ``keep_lines`` lines, and to at most half of ``max_bytes`` (so
    a log of long lines is not rewritten at every append)."""

    max_bytes: int
    keep_lines: int


def tail_bytes(path: Path, lines: int, max_bytes: int | None = None) -> bytes:
    """The last ``lines`` whole lines of the file (and at most ``max_bytes`` of them), read from its end: a block
    at a time, never the whole file for a few lines. A missing file is empty; a last line without its newline (a
    torn append) counts as a line, which the reader skips as it skips it in a whole read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return b""
    try:
        end = os.fstat(fd).st_size
        floor = 0 if max_bytes is None else max(0, end - max_bytes)
        data = b""
        start = end
        # One newline more than the lines wanted: the one that ends the line before the first kept.
        while start > floor and data.count(b"\n") <= lines:
            step = min(_BLOCK, start - floor)
            start -= step
            data = os.pread(fd, step, start) + data
        whole_first = start == 0 or os.pread(fd, 1, start - 1) == b"\n"
    finally:
        os.close(fd)
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()  # the file ends with its newline
    if pieces and not whole_first:
        pieces.pop(0)  # the end of a line that began before what was read
    kept = pieces[-lines:] if lines > 0 else []
    return b"".join(line + b"\n" for line in kept)
