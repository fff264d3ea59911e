"""The processes a stdio MCP server left behind, found by a mark in their environment and ended.

The SDK ends a stdio server's process group. A helper the server started can leave that group
(``setsid()``, a daemon's double fork) and would outlive the server, and the bot. Every process
inherits its parent's environment, so each run of a server gets ``ASSISTANT_MCP_RUN=<random>``
(``new_mark``); when the run is over, every process of this user whose environment holds that mark
gets SIGTERM, and SIGKILL after ``GRACE_SECONDS`` (``end_marked``). Found through ``/proc`` (Linux;
elsewhere nothing is found). A helper that clears its environment before it execs is not found.
"""

from __future__ import annotations

import os
import secrets
import signal
import time

MARK = "ASSISTANT_MCP_RUN"
GRACE_SECONDS = 2.0
#: An environment this long is read no further (the mark is looked for in what was read).
ENVIRON_BYTES = 1 << 20


def new_mark() -> str:
    """A mark for one run of a server (the value of ``MARK`` in its environment)."""
    return secrets.token_hex(12)


def marked(mark: str) -> list[int]:
    """The ids of this user's processes whose environment holds ``MARK=mark`` (this process never)."""
    entry = f"{MARK}={mark}".encode()
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                variables = environ.read(ENVIRON_BYTES).split(b"\0")
        except OSError:  # gone meanwhile, or another user's
            continue
        if entry in variables:
            found.append(int(name))
    return found


def end_marked(mark: str, grace: float | None = None) -> list[int]:
    """End every process with ``mark``: SIGTERM, then SIGKILL for those still there after ``grace`` seconds
    (``GRACE_SECONDS``, read at the call). The ids that were found."""
    found = marked(mark)
    _signal(found, signal.SIGTERM)
    deadline = time.monotonic() + (GRACE_SECONDS if grace is None else grace)
    left = found
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [pid for pid in left if _running(pid)]
    _signal(left, signal.SIGKILL)
    return found


def _signal(pids: list[int], which: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, which)
        except (ProcessLookupError, PermissionError):
            pass


def _running(pid: int) -> bool:
    """Still there and not a zombie (an ended child its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
