"""The ``calendar`` section: the CalDAV calendar the ``calendar`` skill lists and changes (docs/actions.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import number, reads, text, whole
from assistant_framework.config.settings.readers import HTTP_URL


@dataclass(frozen=True)
class CalendarSettings:
    """The ``calendar`` section. Empty ``url``: the skill says the calendar is not set up."""

    #: The CalDAV server's address (its principal or the calendar's own URL).
    url: str = field(default="", metadata=reads(text, pattern=HTTP_URL))
    username: str = field(default="", metadata=reads(text))
    password: str = field(default="", repr=False, metadata=reads(text))
    #: The name of an environment variable holding the password (instead of ``password``).
    password_env: str = field(default="", metadata=reads(text))
    #: The calendar's display name; empty: the first calendar the server lists.
    calendar: str = field(default="", metadata=reads(text))
    #: The whole of one skill call to the server (every request of it, connect to last byte; http_deadline.py).
    timeout_seconds: float = field(default=20.0, metadata=reads(number, above=0, maximum=120))
    #: Days ahead that ``list`` shows (from local midnight today).
    days: int = field(default=30, metadata=reads(whole, minimum=1, maximum=366))
