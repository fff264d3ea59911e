"""A bound on the log lines of the page and of every listener: many requests must not flood the bot's (rotating)
log.

Each kind of line (logger, level and message template) may appear ``per_minute`` times a minute;
further ones are counted, and the next line of that kind let through says how many were left out.
So an attacker's ten thousand 401s or a burst of identical errors cost a few lines, not the log
that holds the bot's own history.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

#: The loggers every listener's server writes to (Tornado's, the guarded server's); asyncio's too, where a
#: callback error lands.
SERVER_LOGGERS = (
    "tornado.access",
    "tornado.application",
    "tornado.general",
    "asyncio",
    "assistant_framework.web.limits",
)
#: The page's: the server's and its handlers'.
WEB_LOGGERS = (
    *SERVER_LOGGERS,
    "assistant_framework.web.base",
    "assistant_framework.web.server",
    "assistant_framework.web.pages",
    "assistant_framework.web.memory_pages",
)
PER_MINUTE = 20
_MAX_KINDS = 1000


class LogBudget(logging.Filter):
    """Lets at most ``per_minute`` records of each kind through per minute (see the module docstring)."""

    def __init__(self, per_minute: int = PER_MINUTE, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.per_minute, self.clock = per_minute, clock
        self._kinds: OrderedDict[tuple[Any, ...], list[Any]] = OrderedDict()  # kind -> [window start, shown, left out]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, record.levelno, str(record.msg)[:200])
        now = self.clock()
        with self._lock:
            entry = self._kinds.get(kind)
            if entry is None:
                entry = self._kinds[kind] = [now, 0, 0]
                while len(self._kinds) > _MAX_KINDS:
                    self._kinds.popitem(last=False)
            if now - entry[0] >= 60:
                entry[0], entry[1] = now, 0
            if entry[1] >= self.per_minute:
                entry[2] += 1
                return False
            entry[1] += 1
            left_out, entry[2] = entry[2], 0
        if left_out:
            record.msg = f"{record.getMessage()} ({left_out} more lines like this were left out of the log)"
            record.args = None
        return True


_installed = threading.Lock()


def install(budget: LogBudget | None = None, loggers: Iterable[str] = WEB_LOGGERS) -> LogBudget:
    """Put a fresh budget on each of ``loggers`` (the page's by default), in place of one an earlier server set."""
    budget = budget or LogBudget()
    with _installed:
        for name in loggers:
            logger = logging.getLogger(name)
            for existing in [f for f in logger.filters if isinstance(f, LogBudget)]:
                logger.removeFilter(existing)
            logger.addFilter(budget)
    return budget
