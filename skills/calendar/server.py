"""The owner's CalDAV calendar as the skill reaches it: the connection, the calendar by its display name,
and one event by its UID. Every failure is a ValueError in one sentence."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import requests

from assistant_framework.config.settings.calendar import CalendarSettings
from assistant_framework.http_deadline import Deadline, DeadlineAdapter

if TYPE_CHECKING:  # caldav is imported when the skill first talks to the server
    from caldav import Calendar, CalendarObjectResource

NOT_SET_UP = "the calendar is not set up: the owner sets calendar.url in the config (docs/actions.md)"


def too_slow(settings: CalendarSettings) -> str:
    """The sentence of a call to the server that outlasted ``calendar.timeout_seconds``."""
    return (
        f"the calendar server did not finish answering within {settings.timeout_seconds:g} s "
        "(calendar.timeout_seconds); nothing more was asked of it"
    )


def password(settings: CalendarSettings) -> str:
    """``calendar.password``, else the environment variable ``calendar.password_env`` names."""
    if settings.password:
        return settings.password
    return os.environ.get(settings.password_env, "") if settings.password_env else ""


@contextmanager
def owner_calendar(settings: CalendarSettings) -> Iterator[Calendar]:
    """The configured calendar (a ``caldav.Calendar``), its connection closed afterwards. Everything asked of
    the server inside the ``with`` block shares one deadline, ``calendar.timeout_seconds`` (http_deadline.py): a
    server that sends a byte now and then (which no per-read timeout ends) is cut at it."""
    if not settings.url:
        raise ValueError(NOT_SET_UP)
    # Imported here: a venv made before caldav became a dependency still loads every skill.
    try:
        import caldav
        from caldav.lib import error as caldav_error
    except ImportError:
        raise ValueError("the caldav library is missing: run make install") from None
    with Deadline(settings.timeout_seconds) as deadline:
        try:
            with caldav.DAVClient(
                settings.url,
                username=settings.username or None,
                password=password(settings) or None,
                timeout=math.ceil(settings.timeout_seconds),  # per read (caldav takes whole seconds): never 0
            ) as client:
                adapter = DeadlineAdapter(pool_maxsize=1)
                client.session.mount("http://", adapter)
                client.session.mount("https://", adapter)
                yield _find(client, settings)
        except Exception as exc:
            if deadline.expired:  # a cut answer reads as anything: a short body, bad XML, a closed connection
                raise ValueError(too_slow(settings)) from None
            if isinstance(exc, requests.RequestException | caldav_error.DAVError | OSError):
                raise ValueError(f"the calendar server did not answer as expected ({type(exc).__name__})") from None
            raise


def _find(client: Any, settings: CalendarSettings) -> Calendar:
    calendars: list[Calendar] = client.principal().calendars()  # caldav leaves principal() untyped
    if not calendars:
        raise ValueError("the calendar server has no calendar for this user")
    if not settings.calendar:
        return calendars[0]
    wanted = settings.calendar.casefold()
    for calendar in calendars:
        if str(calendar.name or "").casefold() == wanted:
            return calendar
    names = ", ".join(repr(str(c.name)) for c in calendars[:10])
    raise ValueError(f"no calendar named {settings.calendar!r} (calendar.calendar); the server has {names}")


def event_by_uid(calendar: Calendar, uid: str) -> CalendarObjectResource:
    """The event with this UID; ValueError when there is none (the model should list first)."""
    from caldav.lib import error as caldav_error

    try:
        return calendar.event_by_uid(uid)
    except caldav_error.NotFoundError:
        raise ValueError(f"no event with uid {uid!r}: list the events and use a uid from there") from None
