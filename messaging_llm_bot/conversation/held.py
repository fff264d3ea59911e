"""A message the durable inbox cannot store is held, never lost (Telegram and Signal).

When a write to ``state/inbox/`` fails (the disk is full, the folder read-only, the process out of
file descriptors), the message is not confirmed to its source: Telegram gets no next ``getUpdates``
offset (or a 503 to its webhook request) and delivers it again; Signal's event stream is not read
further until it is stored (docs/signal.md says what Signal cannot deliver again). Storing is tried
again with a growing pause; the cause is logged once per outage, and once when storage works again;
each chat that wrote meanwhile is told once that its message waits.
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Callable, Hashable

log = logging.getLogger(__name__)

#: The pause before the first new try, doubled after each failed one up to the most.
RETRY_FIRST_SECONDS = 1.0
RETRY_MAX_SECONDS = 30.0
#: At most this many chats are remembered as told during one outage (then they may be told again).
MAX_TOLD = 10_000

_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
_NO_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


def storage_problem(err: OSError) -> str:
    """What is wrong with the workspace, in words for the user (disk full, read-only, ...)."""
    if err.errno in _DISK_FULL:
        return "the disk of my workspace is full"
    if err.errno in _READ_ONLY:
        return "my workspace is read-only"
    if err.errno in _NO_DESCRIPTORS:
        return "I have too many files open"
    return f"my workspace cannot be written ({err.strerror or type(err).__name__})"


def storage_error_text(err: OSError) -> str:
    """The user's message when the workspace cannot be written (disk full, read-only)."""
    return (
        f"⚠️ I could not save your message because {storage_problem(err)}. Nothing was changed; please tell the owner."
    )


def held_text(err: OSError) -> str:
    """The one notice a chat gets while its message waits for storage."""
    return (
        f"⚠️ I cannot save messages right now ({storage_problem(err)}). I'll answer yours as soon as I can; "
        "there is no need to send it again."
    )


class StorageOutage:
    """The inbox of one frontend cannot store messages: one log line per outage and one at its end, the
    pause before the next try, and which chats were told. Used from one event loop (or one thread)."""

    def __init__(self, frontend: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.frontend = frontend
        self.clock = clock
        self.down = False
        self.tries = 0
        self._since = 0.0
        self._delay = RETRY_FIRST_SECONDS
        self._told: set[Hashable] = set()

    def failed(self, err: OSError, held: str, *, refused: bool = False) -> float:
        """Storing ``held`` (what waits, for the log) failed with ``err``: the seconds to wait before trying again.
        ``refused``: it does not wait here; the platform is told it did not arrive and sends it again (a webhook)."""
        self.tries += 1
        if not self.down:
            self.down, self._since, self._delay = True, self.clock(), RETRY_FIRST_SECONDS
            then = (
                "refused, so the platform sends it again"
                if refused
                else f"held, not confirmed, and storing is tried again every {RETRY_MAX_SECONDS:.0f} s at most"
            )
            log.error(
                "%s: the inbox cannot store messages: %s; %s is %s until it works (logged once)",
                self.frontend,
                err,
                held,
                then,
            )
            return self._delay
        self._delay = min(self._delay * 2, RETRY_MAX_SECONDS)
        return self._delay

    def ok(self) -> None:
        """A message was stored: the outage, if any, is over."""
        if self.down:
            log.warning(
                "%s: the inbox stores messages again after %.0f s and %d tries; answering what was held",
                self.frontend,
                self.clock() - self._since,
                self.tries,
            )
        self.down, self.tries = False, 0
        self._told.clear()

    def tell(self, chat: Hashable) -> bool:
        """True the first time in this outage that ``chat`` has a message held (tell it once)."""
        if chat in self._told:
            return False
        if len(self._told) >= MAX_TOLD:
            self._told.clear()
        self._told.add(chat)
        return True
